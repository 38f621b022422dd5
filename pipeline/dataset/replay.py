"""Replaying tool calls in a fresh session: how expected end states are computed, never written by hand.

Generic over domains: the session's world carries its domain's tools. A task's set-up actions run first; each
action runs on the side its requestor names (the customer's own tools in a domain with dual control).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pipeline.dataset.assertions import check_assertions
from pipeline.dataset.setup import start_session
from pipeline.dataset.task import Action, Task
from pipeline.outputs import atomic_file
from pipeline.world import Session, World, dump_full, execute


def replay_actions(
    world: World, actions: Iterable[Action], authenticated_user_id: str | None = None, task: Task | None = None
) -> Session:
    """Execute `actions` in order in a new session (in `task`'s starting state, when given), each on its
    requestor's side; refused calls stay in `session.log` with ok=False."""
    session = start_session(world, task, authenticated_user_id=authenticated_user_id)
    for action in actions:
        execute(session, action.name, action.arguments, world.side_of(action.requestor))
    return session


def replay_gold(world: World, task: Task) -> Session:
    """The task's expected end state: its set-up, then its gold actions replayed as its customer."""
    return replay_actions(world, task.gold_actions, authenticated_user_id=task.customer_user_id, task=task)


def replay_task(world: World, task: Task, tables: Iterable[str] | None = None) -> dict:
    """One task's gold end state: the records that differ from the base world and the gold calls refused; in a
    domain with dual control also the customer-side state in full and each env assertion with `met`."""
    session = replay_gold(world, task)
    changed = session.changed()
    line: dict[str, Any] = {
        "task_id": task.id,
        "changed": {table: changed[table] for table in (tables or world.table_names)},
        "failed_actions": [event.name for event in session.log if not event.ok],
    }
    if world.domain.user_tables:
        line["user_state"] = user_state(session)
    if task.evaluation is not None and task.evaluation.env_assertions:
        line["assertions"] = [r.model_dump() for r in check_assertions(session, task.evaluation.env_assertions)]
    return line


def user_state(session: Session) -> dict:
    """The customer-side state as the domain's files lay it out: each customer-side table's single record under
    the table's name, or the table keyed by id when it holds several."""
    out: dict = {}
    for table in session.world.domain.user_tables:
        keys = session.keys(table)
        records = {k: dump_full(session.get(table, k)) for k in keys}
        out[table] = records[keys[0]] if len(keys) == 1 else records
    return out


def write_lines(out_file: str | Path, lines: list[dict]) -> list[dict]:
    """Write JSON lines atomically (pipeline.outputs.atomic_file): a reader never sees half a replay; returns the
    lines."""
    with atomic_file(out_file) as fh:
        for line in lines:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    return lines
