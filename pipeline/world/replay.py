"""Replaying tool calls in a fresh session: how expected end states are computed, never written by hand.

Generic over domains: the session's world carries its domain's tools.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from pipeline.dataset.task import Action, Task
from pipeline.world.tables import Session, World
from pipeline.world.tools import execute


def replay_actions(world: World, actions: Iterable[Action], authenticated_user_id: str | None = None) -> Session:
    """Execute `actions` in order in a new session; refused calls stay in `session.log` with ok=False."""
    session = world.session(authenticated_user_id=authenticated_user_id)
    for action in actions:
        execute(session, action.name, action.arguments)
    return session


def replay_gold(world: World, task: Task) -> Session:
    """The task's expected end state: its gold actions replayed as its customer."""
    return replay_actions(world, task.gold_actions, authenticated_user_id=task.customer_user_id)


def replay_task(world: World, task: Task, tables: Iterable[str] | None = None) -> dict:
    """One task's gold end state: the records that differ from the base world and the gold calls refused."""
    session = replay_gold(world, task)
    changed = session.changed()
    return {
        "task_id": task.id,
        "changed": {table: changed[table] for table in (tables or world.table_names)},
        "failed_actions": [event.name for event in session.log if not event.ok],
    }


def write_replay(path: str | Path, out_file: str | Path, domain: str | None = None) -> list[dict]:
    """Replay every task of a τ²-bench domain directory (its domain named, or found from its tables) on a
    fresh session each, in task-file order; write one JSON line per task atomically; return the lines."""
    from pipeline.world.registry import domain_of_directory, resolve_domain

    d = resolve_domain(domain) if domain else domain_of_directory(Path(path))
    importer = d.require("tau2_importer", needed_for="world replay")
    world, tasks = importer.load(path)
    return write_lines(out_file, [replay_task(world, task, importer.replay_tables) for task in tasks])


def write_lines(out_file: str | Path, lines: list[dict]) -> list[dict]:
    """Write JSON lines atomically (temp file + rename): a reader never sees half a replay; returns the lines."""
    out = Path(out_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return lines
