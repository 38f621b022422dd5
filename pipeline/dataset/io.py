"""Task files: JSON Lines, one pydantic-validated task a line; errors name the line and the field."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from pipeline.dataset.task import Task
from pipeline.errors import InputError
from pipeline.outputs import atomic_file

MAX_TASK_FILE_BYTES = 1 << 30  # 1 GiB: far above any task set (200 tasks are ~1 MB), far below a runaway file


class TaskFileError(InputError, ValueError):
    """A task file that cannot be read; the message names the file, line and field."""


def read_tasks(path: str | Path) -> list[Task]:
    path = Path(path)
    if not path.exists():
        raise TaskFileError(f"{path}: file not found")
    if not path.is_file():  # a folder, a device (/dev/zero never ends), a pipe
        raise TaskFileError(f"{path}: not a regular file; give a tasks.jsonl file")
    size = path.stat().st_size
    if size > MAX_TASK_FILE_BYTES:
        raise TaskFileError(f"{path}: {size} bytes, more than a task file holds ({MAX_TASK_FILE_BYTES} at most)")
    try:
        data_bytes = path.read_bytes()
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(data_bytes.splitlines(), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TaskFileError(f"{path}:{lineno}: not UTF-8 text (byte {exc.start + 1}: {exc.reason})") from None
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskFileError(f"{path}:{lineno}: invalid JSON: {exc.msg}") from None
        except RecursionError:
            raise TaskFileError(f"{path}:{lineno}: JSON nested too deeply to be a task") from None
        try:
            task = Task.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "<task>"
            raise TaskFileError(f"{path}:{lineno}: field {field}: {err['msg']}") from None
        if task.id in seen:
            raise TaskFileError(
                f"{path}:{lineno}: field id: duplicate task id {task.id!r} (first on line {seen[task.id]})"
            )
        seen[task.id] = lineno
        tasks.append(task)
    return tasks


def write_tasks(path: str | Path, tasks: Iterable[Task]) -> int:
    """Write atomically (pipeline.outputs.atomic_file) so a crash or a full disk never leaves half a file."""
    n = 0
    with atomic_file(path) as fh:
        for task in tasks:
            fh.write(task.model_dump_json(exclude_defaults=False) + "\n")
            n += 1
    return n


def distinct_tasks(tasks: Iterable[Task]) -> list[Task]:
    """The tasks with those equal to an earlier one apart from their id left out (the first kept, order kept): a
    small world's generator repeats itself, and a repeated task would count twice in pass^k."""
    seen: set[str] = set()
    kept = []
    for task in tasks:
        key = json.dumps(task.model_dump(mode="json", exclude={"id"}), sort_keys=True)
        if key not in seen:
            seen.add(key)
            kept.append(task)
    return kept
