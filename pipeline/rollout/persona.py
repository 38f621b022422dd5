"""Persona choice: the same task and trial always get the same persona."""

from __future__ import annotations

import hashlib

from pipeline.dataset import PERSONAS, Task


def choose_persona(task_id: str, trial: int) -> str:
    """Persona from a hash of task id and trial (stable across runs and machines).

    >>> choose_persona("t1", 0) == choose_persona("t1", 0)
    True
    """
    digest = hashlib.sha256(f"{task_id}:{trial}".encode()).digest()
    return PERSONAS[digest[0] % len(PERSONAS)]


def persona_for(task: Task, trial: int) -> str:
    return task.user_script.persona or choose_persona(task.id, trial)
