"""Trials: an agent played k times on each task against a simulated customer, each trial graded from the state
it leaves; in threads on one machine (`executor`), many episodes in flight (`batch`), or on a Ray cluster
(`ray_executor`), with finished trials kept so an interrupted run resumes (`resume`)."""

from pipeline.trials.batch import run_batched
from pipeline.trials.executor import SerialExecutor
from pipeline.trials.ray_cluster import check_client
from pipeline.trials.ray_executor import RayExecutor
from pipeline.trials.resume import TrialJournal
from pipeline.trials.trial import TrialResult, trial_seed

__all__ = [
    "RayExecutor",
    "SerialExecutor",
    "TrialJournal",
    "TrialResult",
    "check_client",
    "run_batched",
    "trial_seed",
]
