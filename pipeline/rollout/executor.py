"""Executors fan tasks × trials out to the episode runner and grade each trial as it finishes.

The serial executor is the default (and what tests use); a Ray executor plugs in behind the same `run`.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass

from pipeline.dataset.task import Task
from pipeline.grading.grader import grade
from pipeline.grading.judge import Judge
from pipeline.grading.verdict import Verdict
from pipeline.rollout.protocols import Agent, User
from pipeline.rollout.runner import Limits, run_episode
from pipeline.rollout.trajectory import Trajectory
from pipeline.world.tables import World

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
    attempts: int = 1
    node: str | None = None  # the Ray node that ran the trial (None: this process); not part of the result
    node_ip: str | None = None


def run_trial(
    world: World,
    task: Task,
    agent: Agent,
    user: User,
    trial: int,
    seed: int = 0,
    limits: Limits | None = None,
    judge: Judge | None = None,
    retries: int = 0,
) -> TrialResult:
    """One (task, trial): the episode and its verdict; an infrastructure error is retried up to `retries` times,
    and a trial that stays broken comes back with an infra_error verdict (left out of the metrics)."""
    for attempt in range(retries + 1):
        traj = run_episode(world, task, agent, user, trial=trial, seed=trial_seed(seed, task.id, trial), limits=limits)
        verdict = grade(world, task, traj, limits=limits, judge=judge)
        if not verdict.infra_error:
            break
        log.warning(
            "task %s trial %d: attempt %d/%d lost to an infrastructure error: %s",
            task.id,
            trial,
            attempt + 1,
            retries + 1,
            verdict.diagnostics[0] if verdict.diagnostics else "",
        )
    return TrialResult(task, trial, traj, verdict, attempt + 1)


class SerialExecutor:
    """Runs every (task, trial) in this process; `skip` holds (task id, trial) pairs already done.

    With `batch` > 1, that many episodes are in flight at once and their agent steps go to the agent as one
    batch (`pipeline.rollout.batch`); results then come back as trials finish, not in (task, trial) order.
    """

    def __init__(self, retries: int = 2, judge: Judge | None = None, batch: int = 1) -> None:
        self.retries, self.judge, self.batch = retries, judge, batch

    def run(
        self,
        world: World,
        tasks: Sequence[Task],
        agent: Agent,
        user: User,
        trials: int,
        seed: int = 0,
        limits: Limits | None = None,
        on_result: Callable[[TrialResult], None] | None = None,
        skip: Collection[tuple[str, int]] = (),
    ) -> Iterator[TrialResult]:
        jobs = [(task, trial) for task in tasks for trial in range(trials) if (task.id, trial) not in skip]
        if self.batch > 1:
            from pipeline.rollout.batch import run_batched

            results = run_batched(world, jobs, agent, user, seed, limits, self.judge, self.retries, self.batch)
        else:
            results = (run_trial(world, t, agent, user, k, seed, limits, self.judge, self.retries) for t, k in jobs)
        for result in results:
            if on_result:
                on_result(result)
            yield result
