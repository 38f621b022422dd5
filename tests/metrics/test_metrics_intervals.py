"""Bootstrap intervals: point inside, deterministic per seed, clusters kept whole, coverage, the paired version."""

from __future__ import annotations

import random
from collections import Counter
from statistics import fmean

import pytest

from pipeline.metrics import (
    Interval,
    MetricsInputError,
    bootstrap,
    mean_pass_hat_k,
    paired_bootstrap,
    per_task_pass_hat_k,
    resample_tasks,
    task_clusters,
)


def _results(seed: int, tasks: int = 40, trials: int = 4) -> dict[str, list[bool]]:
    rng = random.Random(seed)
    out = {}
    for i in range(tasks):
        p = rng.random()
        out[f"t{i:03d}"] = [rng.random() < p for _ in range(trials)]
    return out


def test_pass_hat_k_interval_contains_point_and_is_deterministic():
    for seed in range(5):
        results = _results(seed)
        scores = per_task_pass_hat_k(results, 3)
        iv = bootstrap(scores, seed=seed, resamples=500)
        assert isinstance(iv, Interval)
        assert iv.point == mean_pass_hat_k(results, 3)
        assert iv.low <= iv.point <= iv.high and iv.low < iv.high
        assert bootstrap(scores, seed=seed, resamples=500) == iv
        # The mapping's order does not matter, only its content and the seed.
        assert bootstrap(dict(reversed(list(scores.items()))), seed=seed, resamples=500) == iv
    assert bootstrap(scores, seed=1, resamples=500) != bootstrap(scores, seed=2, resamples=500)


def test_higher_confidence_gives_a_wider_interval():
    scores = per_task_pass_hat_k(_results(7), 2)
    narrow = bootstrap(scores, confidence=0.5, resamples=1000)
    wide = bootstrap(scores, confidence=0.99, resamples=1000)
    assert wide.low < narrow.low and narrow.high < wide.high


def test_clustered_resampling_keeps_clusters_whole():
    clusters = {f"t{i}": f"tpl{i % 4}" for i in range(12)}  # 4 templates of 3 tasks
    clusters["t0"] = None  # no template: a cluster of one
    tasks = [f"t{i}" for i in range(12)] + ["solo"]
    groups = task_clusters(tasks, clusters)
    assert sorted(len(g) for g in groups) == [1, 1, 2, 3, 3, 3]
    rng = random.Random(3)
    members = {tpl: {t for t, v in clusters.items() if v == tpl} for tpl in set(clusters.values()) if tpl}
    for _ in range(200):
        sample = Counter(resample_tasks(groups, rng))
        for tpl, ts in members.items():
            assert len({sample[t] for t in ts}) == 1, (tpl, sample)  # all or nothing, same multiplicity
    # Through bootstrap itself: the statistic sees whole clusters.
    seen = []

    def record(values):
        seen.append(Counter(values))
        return 0.0

    bootstrap({t: t for t in tasks}, record, clusters=clusters, resamples=50)
    for sample in seen[1:]:  # seen[0] is the point estimate on the full set
        for ts in members.values():
            assert len({sample[t] for t in ts}) == 1


def test_clustering_widens_the_interval_when_templates_move_together():
    rng = random.Random(11)
    values, clusters = {}, {}
    for tpl in range(10):
        v = float(rng.random() < 0.5)
        for j in range(10):
            values[f"{tpl}-{j}"] = v  # every task of a template passes or fails together
            clusters[f"{tpl}-{j}"] = f"tpl{tpl}"
    flat = bootstrap(values, resamples=1000)
    clustered = bootstrap(values, clusters=clusters, resamples=1000)
    assert flat.point == clustered.point
    # 10 independent units, not 100: about sqrt(10) times wider.
    assert (clustered.high - clustered.low) > 2.5 * (flat.high - flat.low)


def test_bootstrap_coverage_is_near_nominal():
    rng = random.Random(5)
    p, tasks, reps, hits = 0.7, 30, 150, 0
    for rep in range(reps):
        values = {f"t{i}": float(rng.random() < p) for i in range(tasks)}
        low, high = bootstrap(values, seed=rep, resamples=200, confidence=0.9)[1:]
        hits += low <= p <= high
    assert 0.8 <= hits / reps <= 0.97, hits / reps


def test_paired_bootstrap_of_candidate_minus_champion():
    rng = random.Random(2)
    champion = {f"t{i}": float(rng.random() < 0.5) for i in range(60)}
    fixed = [t for t, v in champion.items() if v == 0.0][:3]
    candidate = {t: 1.0 if t in fixed else v for t, v in champion.items()}
    iv = paired_bootstrap(candidate, champion, resamples=1000)
    assert iv.point == pytest.approx(3 / 60)
    # The candidate is never worse on any task, so no paired resample can show a loss...
    assert iv.low >= 0.0 and iv.high > 0.0
    # ...while comparing two independent intervals would not resolve the difference.
    assert bootstrap(candidate, resamples=1000).low < bootstrap(champion, resamples=1000).high
    same = paired_bootstrap(champion, champion, resamples=100)
    assert same == Interval(0.0, 0.0, 0.0)
    assert paired_bootstrap(candidate, champion, resamples=300, seed=4) == paired_bootstrap(
        candidate, champion, resamples=300, seed=4
    )


def test_paired_bootstrap_with_a_custom_statistic_over_outcomes():
    cand = {t: [True, True, True] for t in "abcd"}
    champ = {t: [True, False, True] for t in "abcd"}

    def pass_hat_2(outcome_lists):
        return fmean(per_task_pass_hat_k(dict(enumerate(outcome_lists)), 2).values())

    iv = paired_bootstrap(cand, champ, pass_hat_2, clusters={"a": "x", "b": "x"}, resamples=100)
    assert iv == Interval(1 - 1 / 3, 1 - 1 / 3, 1 - 1 / 3)


def test_interval_errors_name_the_problem():
    with pytest.raises(MetricsInputError, match="empty task set"):
        bootstrap({})
    with pytest.raises(MetricsInputError, match="resamples=0"):
        bootstrap({"a": 1.0}, resamples=0)
    with pytest.raises(MetricsInputError, match="confidence=1.0"):
        bootstrap({"a": 1.0}, confidence=1.0)
    with pytest.raises(MetricsInputError, match=r"only in candidate: \['new'\], only in champion: \['old'\]"):
        paired_bootstrap({"a": 1.0, "new": 1.0}, {"a": 1.0, "old": 0.0})
    with pytest.raises(MetricsInputError, match="empty task set"):
        paired_bootstrap({}, {})
