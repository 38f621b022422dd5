"""Tasks as data: the schema and its files, a task's set-up in a world, gold replays, provenance."""

from pipeline.dataset.io import TaskFileError, read_tasks, write_tasks
from pipeline.dataset.task import Action, KnownInfo, Messes, Provenance, Request, Task, UserScript

__all__ = [
    "Action",
    "KnownInfo",
    "Messes",
    "Provenance",
    "Request",
    "Task",
    "TaskFileError",
    "UserScript",
    "read_tasks",
    "write_tasks",
]
