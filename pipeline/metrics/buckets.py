"""Consistency buckets: did a task pass on every valid trial, on none, or flip between the two?

Flipping tasks are where pass@1 and pass^k part ways, and where training on the agent's own successes helps.
Shares are over tasks. A task with no valid trials (all lost to infrastructure errors) has no bucket and is an
error naming it.
"""

from __future__ import annotations

from typing import Literal

from pipeline.metrics.aggregate import Results, task_counts
from pipeline.metrics.errors import MetricsInputError

Bucket = Literal["always", "flipping", "never"]
BUCKETS: tuple[Bucket, ...] = ("always", "flipping", "never")


def bucket_of(successes: int, trials: int) -> Bucket:
    """The bucket for c passes out of n valid trials.

    >>> bucket_of(3, 3), bucket_of(1, 3), bucket_of(0, 3)
    ('always', 'flipping', 'never')
    """
    if trials < 1:
        raise MetricsInputError(f"a bucket needs at least one valid trial, got n={trials}")
    if not 0 <= successes <= trials:
        raise MetricsInputError(f"successes c={successes} must be within 0..n={trials}")
    if successes == trials:
        return "always"
    return "never" if successes == 0 else "flipping"


def consistency_buckets(results: Results) -> dict[str, Bucket]:
    """Per-task bucket over its valid trials (None outcomes are skipped).

    >>> consistency_buckets({"a": [True, True], "b": [True, False], "c": [False, None]})
    {'a': 'always', 'b': 'flipping', 'c': 'never'}
    """
    out: dict[str, Bucket] = {}
    for task_id, (c, n) in task_counts(results).items():
        if n == 0:
            raise MetricsInputError(f"task {task_id!r} has no valid trials (all lost to infrastructure errors)")
        out[task_id] = bucket_of(c, n)
    return out


def bucket_shares(results: Results) -> dict[Bucket, float]:
    """Share of tasks in each bucket; always all three keys, summing to 1.

    >>> bucket_shares({"a": [True, True], "b": [True, False], "c": [False], "d": [True]})
    {'always': 0.5, 'flipping': 0.25, 'never': 0.25}
    """
    buckets = consistency_buckets(results)
    return {b: sum(v == b for v in buckets.values()) / len(buckets) for b in BUCKETS}
