"""Task-set aggregates: the mean over tasks of the per-task estimators, each task with its own n.

Input is a mapping task_id → trial outcomes, where True/False is the verdict and None marks a trial lost to an
infrastructure error (excluded from n: the agent was never judged on it). A task whose valid n is smaller than k
is an error naming the task, never a silent zero: pass^k on fewer than k trials is not defined, and dropping the
task would quietly change which tasks the mean is over.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from statistics import fmean

from pipeline.metrics.errors import MetricsInputError
from pipeline.metrics.passk import as_count, pass_at_k, pass_hat_k

Outcome = bool | None
Results = Mapping[str, Sequence[Outcome]]

_MAX_NAMED = 5


def count_outcomes(outcomes: Sequence[Outcome], task_id: str = "?") -> tuple[int, int]:
    """(c, n): passes and valid trials, skipping None (infrastructure errors).

    >>> count_outcomes([True, False, None, True])
    (2, 3)
    >>> count_outcomes([True, 1], task_id="t7")
    Traceback (most recent call last):
    ...
    pipeline.metrics.errors.MetricsInputError: task 't7' trial 1: outcome must be True, False or None, got 1 (int)
    """
    if isinstance(outcomes, str | bytes) or not isinstance(outcomes, Sequence):
        raise MetricsInputError(f"task {task_id!r}: outcomes must be a list of True/False/None, got {outcomes!r}")
    c = n = 0
    for i, o in enumerate(outcomes):
        if o is None:
            continue
        if not isinstance(o, bool):
            raise MetricsInputError(
                f"task {task_id!r} trial {i}: outcome must be True, False or None, got {o!r} ({type(o).__name__})"
            )
        n += 1
        c += o
    return c, n


def task_counts(results: Results) -> dict[str, tuple[int, int]]:
    """Per-task (c, n), validated; an empty task set is an error.

    >>> task_counts({"a": [True, None], "b": [False, False]})
    {'a': (1, 1), 'b': (0, 2)}
    >>> task_counts({})
    Traceback (most recent call last):
    ...
    pipeline.metrics.errors.MetricsInputError: empty task set: no tasks to aggregate over
    """
    if not isinstance(results, Mapping):
        raise MetricsInputError(f"results must be a mapping task_id -> outcomes, got {type(results).__name__}")
    if not results:
        raise MetricsInputError("empty task set: no tasks to aggregate over")
    return {task_id: count_outcomes(outcomes, task_id) for task_id, outcomes in results.items()}


def _require_trials(counts: Mapping[str, tuple[int, int]], k: int) -> None:
    short = [t for t, (_, n) in counts.items() if n < k]
    if short:
        detail = ", ".join(f"{t!r} (n={counts[t][1]})" for t in short[:_MAX_NAMED])
        more = len(short) - _MAX_NAMED
        raise MetricsInputError(
            f"k={k} exceeds the valid trials of {len(short)} task(s): {detail}"
            + (f" and {more} more" if more > 0 else "")
            + " (trials lost to infrastructure errors do not count)"
        )


def _per_task(results: Results, k: int, estimator: Callable[[int, int, int], float]) -> dict[str, float]:
    kk = as_count(k, "k")
    if kk < 1:
        raise MetricsInputError(f"k must be >= 1, got k={kk}")
    counts = task_counts(results)
    _require_trials(counts, kk)
    return {t: estimator(c, n, kk) for t, (c, n) in counts.items()}


def per_task_pass_at_k(results: Results, k: int) -> dict[str, float]:
    """Each task's pass@k estimate (the per-task values a bootstrap resamples).

    >>> per_task_pass_at_k({"a": [True, False], "b": [False, None, False]}, 2)
    {'a': 1.0, 'b': 0.0}
    """
    return _per_task(results, k, pass_at_k)


def per_task_pass_hat_k(results: Results, k: int) -> dict[str, float]:
    """Each task's pass^k estimate.

    >>> per_task_pass_hat_k({"a": [True, True, False], "b": [True, True]}, 2)
    {'a': 0.3333333333333333, 'b': 1.0}
    >>> per_task_pass_hat_k({"a": [True, True], "b": [True, None]}, 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pipeline.metrics.errors.MetricsInputError: k=2 exceeds the valid trials of 1 task(s): 'b' (n=1)...
    """
    return _per_task(results, k, pass_hat_k)


def mean_pass_at_k(results: Results, k: int) -> float:
    """Mean over tasks of pass@k; with k=1 this is pass@1, the mean per-task pass rate.

    >>> mean_pass_at_k({"a": [True, False, False, False], "b": [True, True]}, 1)
    0.625
    """
    return fmean(per_task_pass_at_k(results, k).values())


def mean_pass_hat_k(results: Results, k: int) -> float:
    """Mean over tasks of pass^k.

    >>> mean_pass_hat_k({"a": [True, True, False], "b": [True, True, True]}, 2)
    0.6666666666666666
    """
    return fmean(per_task_pass_hat_k(results, k).values())


def pass_curve(results: Results, max_k: int) -> dict[int, tuple[float, float]]:
    """{k: (pass@k, pass^k)} for k = 1..max_k; every task needs at least max_k valid trials.

    >>> pass_curve({"a": [True, False], "b": [True, True]}, 2)
    {1: (0.75, 0.75), 2: (1.0, 0.5)}
    """
    kk = as_count(max_k, "max_k")
    if kk < 1:
        raise MetricsInputError(f"max_k must be >= 1, got max_k={kk}")
    counts = task_counts(results)
    _require_trials(counts, kk)
    return {
        j: (
            fmean(pass_at_k(c, n, j) for c, n in counts.values()),
            fmean(pass_hat_k(c, n, j) for c, n in counts.values()),
        )
        for j in range(1, kk + 1)
    }
