"""Executors fan tasks × trials out to the episode runner and grade each trial as it finishes.

The serial executor is the default (and what tests use); a Ray executor plugs in behind the same `run`.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from pipeline.dataset.task import Task
from pipeline.grading.grader import grade
from pipeline.grading.verdict import Verdict
from pipeline.rollout.protocols import Agent, User
from pipeline.rollout.runner import Limits, run_episode
from pipeline.rollout.trajectory import Trajectory
from pipeline.world.retail.state import RetailWorld

log = logging.getLogger(__name__)


def trial_seed(seed: int, task_id: str, trial: int) -> int:
    """A per-trial seed that depends only on the run seed, the task and the trial index."""
    digest = hashlib.sha256(f"{seed}:{task_id}:{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


@dataclass
class TrialResult:
    task: Task
    trial: int
    trajectory: Trajectory
    verdict: Verdict


class SerialExecutor:
    """Runs every (task, trial) in order in this process."""

    def run(
        self,
        world: RetailWorld,
        tasks: Sequence[Task],
        agent: Agent,
        user: User,
        trials: int,
        seed: int = 0,
        limits: Limits | None = None,
        on_result: Callable[[TrialResult], None] | None = None,
    ) -> Iterator[TrialResult]:
        for task in tasks:
            for trial in range(trials):
                traj = run_episode(world, task, agent, user, trial=trial, seed=trial_seed(seed, task.id, trial),
                                   limits=limits)
                result = TrialResult(task, trial, traj, grade(world, task, traj, limits=limits))
                if on_result:
                    on_result(result)
                yield result
