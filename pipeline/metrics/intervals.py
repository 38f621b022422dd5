"""Percentile bootstrap intervals over tasks, clustered by template where tasks share one.

Tasks generated from the same template succeed and fail together, so resampling them independently would
understate the uncertainty; instead whole clusters are resampled with replacement and every task of a drawn
cluster comes along. Tasks without a template are clusters of one. The statistic sees the list of per-task
values of one resample (default: their mean), so any per-task quantity works — pass^k via
``per_task_pass_hat_k``, or tuples with a custom statistic. Resampling uses ``random.Random(seed)`` over sorted
cluster keys, so the same inputs and seed give the same interval whatever the mapping order.

The paired version resamples the same tasks for both agents and bootstraps candidate − champion, which is the
interval the gate compares with its margin.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from statistics import fmean
from typing import Any, NamedTuple, TypeVar

from pipeline.metrics.errors import MetricsInputError
from pipeline.metrics.passk import as_count

T = TypeVar("T")
Statistic = Callable[[Sequence[Any]], float]


class Interval(NamedTuple):
    """A point estimate and its bootstrap interval (a tuple, so ``point, low, high = interval`` works)."""

    point: float
    low: float
    high: float


def task_clusters(task_ids: Sequence[str], clusters: Mapping[str, str | None] | None = None) -> list[list[str]]:
    """Group task ids by template, in a fixed order; tasks with no template (absent or None) stand alone.

    Templates of tasks not in ``task_ids`` are ignored (a template map for the whole set serves any subset).

    >>> task_clusters(["t3", "t1", "t2"], {"t1": "refund", "t2": "refund"})
    [['t3'], ['t1', 't2']]
    """
    groups: dict[tuple[int, str], list[str]] = {}
    for task_id in sorted(task_ids):
        template = clusters.get(task_id) if clusters else None
        key = (0, task_id) if template is None else (1, str(template))
        groups.setdefault(key, []).append(task_id)
    return [groups[key] for key in sorted(groups)]


def resample_tasks(groups: Sequence[Sequence[str]], rng: random.Random) -> list[str]:
    """One clustered resample: draw len(groups) clusters with replacement, keep every task of each drawn cluster.

    >>> resample_tasks([["a"], ["b", "c"]], random.Random(0))
    ['b', 'c', 'b', 'c']
    """
    drawn = rng.choices(range(len(groups)), k=len(groups))
    return [task_id for g in drawn for task_id in groups[g]]


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile of sorted values (numpy's default method)."""
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _check(resamples: int, confidence: float) -> int:
    n = as_count(resamples, "resamples")
    if n < 1:
        raise MetricsInputError(f"resamples must be >= 1, got resamples={n}")
    if not 0.0 < confidence < 1.0:
        raise MetricsInputError(f"confidence must be strictly between 0 and 1, got confidence={confidence!r}")
    return n


def _interval(point: float, stats: list[float], confidence: float) -> Interval:
    stats.sort()
    tail = (1.0 - confidence) / 2.0
    return Interval(point, _quantile(stats, tail), _quantile(stats, 1.0 - tail))


def bootstrap(
    values: Mapping[str, T],
    statistic: Statistic = fmean,
    *,
    clusters: Mapping[str, str | None] | None = None,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """(point, low, high) for ``statistic`` over per-task values, resampling tasks (or their template clusters).

    >>> bootstrap({"a": 1.0, "b": 0.0, "c": 1.0, "d": 1.0}, seed=1, resamples=500)
    Interval(point=0.75, low=0.25, high=1.0)
    """
    _check(resamples, confidence)
    point, stats = bootstrap_draws(values, statistic, clusters=clusters, resamples=resamples, seed=seed)
    return _interval(point, stats, confidence)


def paired_bootstrap_draws(
    candidate: Mapping[str, T],
    champion: Mapping[str, T],
    statistic: Statistic = fmean,
    *,
    clusters: Mapping[str, str | None] | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, list[float]]:
    """(point, draws): statistic(candidate) − statistic(champion) and its value on each paired clustered resample.

    The draws are what `paired_bootstrap` takes its percentiles of (same seed, same draws); their spread is the
    standard error the gate sizes its minimum detectable effect from. Both agents must have been measured on
    exactly the same tasks; a mismatch names the tasks.

    >>> point, draws = paired_bootstrap_draws({"a": 1.0, "b": 0.0}, {"a": 1.0, "b": 0.0}, resamples=3)
    >>> point, draws
    (0.0, [0.0, 0.0, 0.0])
    """
    n = _check(resamples, 0.5)
    if not candidate or not champion:
        raise MetricsInputError("empty task set: nothing to bootstrap over")
    only_cand = sorted(set(candidate) - set(champion))
    only_champ = sorted(set(champion) - set(candidate))
    if only_cand or only_champ:
        raise MetricsInputError(
            "paired bootstrap needs the same tasks for both agents; "
            f"only in candidate: {only_cand[:5]}, only in champion: {only_champ[:5]}"
        )
    groups = task_clusters(list(candidate), clusters)
    rng = random.Random(seed)
    ids = sorted(candidate)
    point = statistic([candidate[t] for t in ids]) - statistic([champion[t] for t in ids])
    stats = []
    for _ in range(n):
        sample = resample_tasks(groups, rng)
        stats.append(statistic([candidate[t] for t in sample]) - statistic([champion[t] for t in sample]))
    return point, stats


def bootstrap_draws(
    values: Mapping[str, T],
    statistic: Statistic = fmean,
    *,
    clusters: Mapping[str, str | None] | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, list[float]]:
    """(point, draws) of ``statistic`` over per-task values: the resamples `bootstrap` takes percentiles of."""
    n = _check(resamples, 0.5)
    if not values:
        raise MetricsInputError("empty task set: nothing to bootstrap over")
    groups = task_clusters(list(values), clusters)
    rng = random.Random(seed)
    point = statistic([values[t] for t in sorted(values)])
    return point, [statistic([values[t] for t in resample_tasks(groups, rng)]) for _ in range(n)]


def percentile_interval(point: float, draws: Sequence[float], confidence: float) -> Interval:
    """The two-sided percentile interval of bootstrap draws around ``point``."""
    _check(1, confidence)
    return _interval(point, list(draws), confidence)


def paired_bootstrap(
    candidate: Mapping[str, T],
    champion: Mapping[str, T],
    statistic: Statistic = fmean,
    *,
    clusters: Mapping[str, str | None] | None = None,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """(point, low, high) of statistic(candidate) − statistic(champion), both on the same resampled tasks.

    Both agents must have been measured on exactly the same tasks; a mismatch names the tasks.

    >>> paired_bootstrap({"a": 1.0, "b": 1.0, "c": 0.0}, {"a": 0.0, "b": 1.0, "c": 0.0}, resamples=200).point
    0.3333333333333333
    """
    _check(resamples, confidence)
    point, stats = paired_bootstrap_draws(
        candidate, champion, statistic, clusters=clusters, resamples=resamples, seed=seed
    )
    return _interval(point, stats, confidence)
