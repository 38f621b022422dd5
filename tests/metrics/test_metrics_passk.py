"""The per-task estimators against brute-force enumeration, exact rationals and large-n stability."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest

from pipeline.metrics import MetricsInputError, pass_at_k, pass_hat_k


def _brute(outcomes: list[bool], k: int) -> tuple[Fraction, Fraction]:
    """Share of all k-subsets of the trials with at least one pass / with only passes."""
    subsets = list(itertools.combinations(outcomes, k))
    any_pass = sum(any(s) for s in subsets)
    all_pass = sum(all(s) for s in subsets)
    return Fraction(any_pass, len(subsets)), Fraction(all_pass, len(subsets))


@pytest.mark.parametrize("n", range(1, 11))
def test_estimators_match_enumeration_over_all_k_subsets(n):
    rng = random.Random(n)
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        rng.shuffle(outcomes)  # the estimators must not care where the passes fell
        for k in range(1, n + 1):
            at, hat = _brute(outcomes, k)
            # Exact: the estimator is the correctly rounded value of the same rational.
            assert pass_at_k(c, n, k) == float(at), (n, c, k)
            assert pass_hat_k(c, n, k) == float(hat), (n, c, k)


def test_k_equal_one_is_the_pass_rate_and_edges():
    assert pass_at_k(3, 7, 1) == pass_hat_k(3, 7, 1) == 3 / 7
    assert pass_hat_k(0, 5, 1) == 0.0 and pass_at_k(0, 5, 5) == 0.0
    assert pass_hat_k(5, 5, 5) == 1.0 and pass_at_k(5, 5, 5) == 1.0
    assert pass_at_k(1, 5, 5) == 1.0  # the one pass is in every 5-subset
    assert pass_hat_k(4, 5, 5) == 0.0


def _log_pass_hat(c: int, n: int, k: int) -> float:
    return math.lgamma(c + 1) - math.lgamma(c - k + 1) - math.lgamma(n + 1) + math.lgamma(n - k + 1)


def test_stable_and_exact_at_n_1000():
    n = 1000
    prev_hat, prev_at = 1.0, 0.0
    for k in range(1, n + 1, 37):
        hat, at = pass_hat_k(700, n, k), pass_at_k(700, n, k)
        assert math.isfinite(hat) and 0.0 <= hat <= 1.0
        assert math.isfinite(at) and 0.0 <= at <= 1.0
        assert hat <= prev_hat and at >= prev_at  # monotone in k
        prev_hat, prev_at = hat, at
        if hat > 0:
            assert math.log(hat) == pytest.approx(_log_pass_hat(700, n, k), rel=1e-9, abs=1e-9)
    exact = Fraction(math.comb(999, 500), math.comb(1000, 500))
    assert pass_hat_k(999, 1000, 500) == float(exact) == 0.5  # C(999,500)/C(1000,500) = 500/1000
    assert pass_at_k(1, 1000, 1) == 0.001
    assert pass_at_k(999, 1000, 2) == 1.0
    # Tiny but representable: no underflow to 0 where the true value is far above the float minimum.
    tiny = pass_hat_k(600, 1000, 400)
    assert 0.0 < tiny < 1e-80
    assert math.log(tiny) == pytest.approx(_log_pass_hat(600, 1000, 400), rel=1e-12)
    # pass@k close to 1: 1 - C(n-c,k)/C(n,k) computed without cancellation.
    assert 1.0 - pass_at_k(2, 1000, 3) == pytest.approx(math.comb(998, 3) / math.comb(1000, 3), rel=1e-12)


@pytest.mark.parametrize("fn", [pass_at_k, pass_hat_k])
def test_errors_name_the_offending_value(fn):
    with pytest.raises(MetricsInputError, match=r"k=5 exceeds the n=3 valid trials"):
        fn(1, 3, 5)
    with pytest.raises(MetricsInputError, match=r"c=4 exceeds trials n=3"):
        fn(4, 3, 1)
    with pytest.raises(MetricsInputError, match=r"c=-1"):
        fn(-1, 3, 1)
    with pytest.raises(MetricsInputError, match=r"n=-2"):
        fn(0, -2, 1)
    with pytest.raises(MetricsInputError, match=r"k=0"):
        fn(1, 3, 0)
    with pytest.raises(MetricsInputError, match=r"k must be an integer count, got 2.0"):
        fn(1, 3, 2.0)
    with pytest.raises(MetricsInputError, match=r"successes must be an integer count, got the bool True"):
        fn(True, 3, 1)
    with pytest.raises(MetricsInputError, match=r"k=1 exceeds the n=0"):
        fn(0, 0, 1)
    # A plain ValueError too, for callers that catch that.
    with pytest.raises(ValueError):
        fn(1, 3, 5)
