"""One trial: a (task, trial index) pair run as an episode and graded, with the seed it runs under.

The executors (serial, batched, Ray) all produce `TrialResult`s; `trial_seed` makes a trial's seed depend only on
the run seed, the task and the trial index, so any executor replays the same episode.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from pipeline.dataset import Task
from pipeline.grading import Judge, Verdict, grade
from pipeline.rollout import Agent, Limits, Trajectory, User, run_episode
from pipeline.world import World

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
    and a trial that stays broken comes back with an infra_error verdict (left out of the metrics). An episode
    that finished is kept: when only its grading was lost (the judge could not be reached or read), the retry
    grades the same conversation again instead of playing it again."""
    traj: Trajectory | None = None
    for attempt in range(retries + 1):
        if traj is None or traj.infra_error:
            traj = run_episode(
                world, task, agent, user, trial=trial, seed=trial_seed(seed, task.id, trial), limits=limits
            )
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
    assert traj is not None
    return TrialResult(task, trial, traj, verdict, attempt + 1)
