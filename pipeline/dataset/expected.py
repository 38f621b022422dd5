"""A task's expected outcome: whether its correct end changes the world ('act') or leaves it as it was ('refuse').

A model that never acts passes every task whose correct outcome changes nothing (a request the policy refuses, a
question answered, a transfer), so a pass^k gain can be made of such tasks alone. The split needs to know, for
any task of any domain (a plug-in's, an environment's behind the protocol, an imported τ²-bench task), which kind
it is, and the one generic answer is the gold's: replay the task's gold actions from its starting state and
compare the end state (both sides, under dual control) with the start. Nothing is read from the task's wording,
its requests' `expect` or the domain's tool names.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Literal

from pipeline.dataset.replay import replay_gold
from pipeline.dataset.setup import start_session
from pipeline.dataset.task import Task
from pipeline.errors import InfrastructureError
from pipeline.world import World

log = logging.getLogger(__name__)
Expected = Literal["act", "refuse"]
EXPECTED: tuple[Expected, ...] = ("act", "refuse")


def expected_outcome(world: World, task: Task) -> Expected:
    """'act' when the task's gold end state differs from its starting state, 'refuse' when it changes nothing.

    A gold call the world refuses changes nothing, so a task whose gold writes are all refused counts as 'refuse'
    (as its grading does: the expected state is the replayed one)."""
    if not task.gold_actions:
        return "refuse"
    start = start_session(world, task, authenticated_user_id=task.customer_user_id).changed()
    return "act" if replay_gold(world, task).changed() != start else "refuse"


def expected_outcomes(world: World, tasks: Iterable[Task], attempts: int = 3) -> dict[str, Expected | None]:
    """Task id → expected outcome, one gold replay per task; None for a task whose replay the environment failed
    (an infrastructure error, `attempts` times): the split leaves that task out rather than the run stopping."""
    out: dict[str, Expected | None] = {}
    for task in tasks:
        out[task.id] = None
        for attempt in range(1, attempts + 1):
            try:
                out[task.id] = expected_outcome(world, task)
                break
            except InfrastructureError as exc:
                log.warning("task %s: its gold replay failed (try %d of %d): %s", task.id, attempt, attempts, exc)
    return out
