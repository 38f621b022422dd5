"""Task-set means, infrastructure errors, the pass curve, and unbiasedness of pass^k by exact sum and simulation."""

from __future__ import annotations

import random
from fractions import Fraction
from math import comb
from statistics import fmean, pstdev

import pytest

from pipeline.metrics import (
    MetricsInputError,
    count_outcomes,
    mean_pass_at_k,
    mean_pass_hat_k,
    pass_at_k,
    pass_curve,
    pass_hat_k,
    per_task_pass_hat_k,
    task_counts,
)

RESULTS = {
    "short": [True, False],  # n=2
    "long": [True, True, True, False],  # n=4
    "infra": [True, None, True, None, False],  # n=3: None excluded
}


def test_mean_is_over_tasks_each_with_its_own_n():
    assert task_counts(RESULTS) == {"short": (1, 2), "long": (3, 4), "infra": (2, 3)}
    assert mean_pass_at_k(RESULTS, 1) == pytest.approx((1 / 2 + 3 / 4 + 2 / 3) / 3)
    expected = fmean([pass_hat_k(1, 2, 2), pass_hat_k(3, 4, 2), pass_hat_k(2, 3, 2)])
    assert mean_pass_hat_k(RESULTS, 2) == expected
    # Not the pooled estimator over all 9 valid trials.
    assert expected != pytest.approx(pass_hat_k(6, 9, 2))


def test_pass_curve_matches_the_single_k_means():
    curve = pass_curve(RESULTS, 2)
    assert list(curve) == [1, 2]
    for k, (at, hat) in curve.items():
        assert at == mean_pass_at_k(RESULTS, k)
        assert hat == mean_pass_hat_k(RESULTS, k)
    assert curve[1][0] == curve[1][1]  # pass@1 == pass^1


def test_task_with_too_few_valid_trials_is_named():
    with pytest.raises(MetricsInputError, match=r"k=3 exceeds the valid trials of 1 task\(s\): 'short' \(n=2\)"):
        pass_curve(RESULTS, 3)
    with pytest.raises(MetricsInputError, match=r"'all_lost' \(n=0\)"):
        mean_pass_hat_k({"ok": [True], "all_lost": [None, None]}, 1)
    many = {f"t{i}": [True] for i in range(8)}
    with pytest.raises(MetricsInputError, match=r"8 task\(s\).*and 3 more"):
        mean_pass_at_k(many, 2)


def test_bad_inputs_name_what_is_wrong():
    with pytest.raises(MetricsInputError, match="empty task set"):
        mean_pass_hat_k({}, 1)
    with pytest.raises(MetricsInputError, match="empty task set"):
        pass_curve({}, 1)
    with pytest.raises(MetricsInputError, match=r"task 'x' trial 2: outcome must be True, False or None, got 'yes'"):
        count_outcomes([True, False, "yes"], "x")
    with pytest.raises(MetricsInputError, match=r"task 'x' trial 0: .* got 1 \(int\)"):
        mean_pass_at_k({"x": [1]}, 1)
    with pytest.raises(MetricsInputError, match=r"task 'x': outcomes must be a list"):
        mean_pass_at_k({"x": "TTF"}, 1)
    with pytest.raises(MetricsInputError, match="results must be a mapping"):
        mean_pass_at_k([[True]], 1)
    with pytest.raises(MetricsInputError, match="max_k=0"):
        pass_curve(RESULTS, 0)
    with pytest.raises(MetricsInputError, match="k=0"):
        per_task_pass_hat_k(RESULTS, 0)


@pytest.mark.parametrize(("p", "n", "k"), [(Fraction(3, 5), 5, 3), (Fraction(1, 3), 4, 2), (Fraction(9, 10), 8, 8)])
def test_estimators_are_exactly_unbiased_under_the_binomial(p, n, k):
    """E[C(c,k)/C(n,k)] = p^k and E[1 - C(n-c,k)/C(n,k)] = 1 - (1-p)^k, summed exactly over c ~ Binomial(n, p)."""
    pmf = [comb(n, c) * p**c * (1 - p) ** (n - c) for c in range(n + 1)]
    hat = sum(w * Fraction(comb(c, k), comb(n, k)) for c, w in enumerate(pmf))
    at = sum(w * (1 - Fraction(comb(n - c, k), comb(n, k))) for c, w in enumerate(pmf))
    naive = sum(w * Fraction(c, n) ** k for c, w in enumerate(pmf))
    assert hat == p**k
    assert at == 1 - (1 - p) ** k
    assert naive > p**k  # the plug-in (c/n)^k overstates pass^k (Jensen), by a fixed amount at fixed n


def test_simulation_pass_hat_k_unbiased_naive_plugin_biased():
    rng = random.Random(20240611)
    p, n, k, tasks = 0.6, 5, 3, 20000
    est, naive, at = [], [], []
    for _ in range(tasks):
        c = sum(rng.random() < p for _ in range(n))
        est.append(pass_hat_k(c, n, k))
        at.append(pass_at_k(c, n, k))
        naive.append((c / n) ** k)
    se = pstdev(est) / tasks**0.5
    assert abs(fmean(est) - p**k) < 4 * se, (fmean(est), p**k, se)
    assert abs(fmean(at) - (1 - (1 - p) ** k)) < 4 * pstdev(at) / tasks**0.5
    naive_se = pstdev(naive) / tasks**0.5
    assert fmean(naive) - p**k > 20 * naive_se  # about +0.08 on 0.216: far outside noise
