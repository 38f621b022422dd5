"""Executors fan tasks × trials out to the episode runner and grade each trial as it finishes.

The serial executor is the default (and what tests use); a Ray executor plugs in behind the same `run`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence

from pipeline.dataset import Task
from pipeline.grading import Judge
from pipeline.rollout import Agent, Limits, User
from pipeline.trials.batch import run_batched
from pipeline.trials.trial import TrialResult, run_trial
from pipeline.world import World


class SerialExecutor:
    """Runs every (task, trial) in this process; `skip` holds (task id, trial) pairs already done.

    With `batch` > 1, that many episodes are in flight at once and their agent steps go to the agent as one
    batch (`pipeline.trials.batch`); results then come back as trials finish, not in (task, trial) order.
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
            results = run_batched(world, jobs, agent, user, seed, limits, self.judge, self.retries, self.batch)
        else:
            results = (run_trial(world, t, agent, user, k, seed, limits, self.judge, self.retries) for t, k in jobs)
        for result in results:
            if on_result:
                on_result(result)
            yield result
