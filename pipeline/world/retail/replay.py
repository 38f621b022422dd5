"""Replaying tool calls in a fresh session: how expected end states are computed, never written by hand."""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.dataset.task import Action, Task
from pipeline.world.retail.state import RetailWorld, Session
from pipeline.world.retail.tools import execute


def replay_actions(world: RetailWorld, actions: Iterable[Action], authenticated_user_id: str | None = None) -> Session:
    """Execute `actions` in order in a new session; refused calls stay in `session.log` with ok=False."""
    session = world.session(authenticated_user_id=authenticated_user_id)
    for action in actions:
        execute(session, action.name, action.arguments)
    return session


def replay_gold(world: RetailWorld, task: Task) -> Session:
    """The task's expected end state: its gold actions replayed as its customer."""
    return replay_actions(world, task.gold_actions, authenticated_user_id=task.customer_user_id)
