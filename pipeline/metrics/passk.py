"""Unbiased per-task estimators of pass@k (at least once in k) and pass^k (every time in k).

Given n valid trials of a task with c passes, the estimators average over all k-subsets of the n trials:
pass@k = 1 − C(n−c, k)/C(n, k) and pass^k = C(c, k)/C(n, k) (the τ-bench estimator). Both are computed from
exact integer binomials and a single correctly rounded division, so they are exact for small n and stable for
large n (Python's int / int never overflows into inf or loses the ratio's precision).
"""

from __future__ import annotations

import operator
from math import comb

from pipeline.metrics.errors import MetricsInputError


def as_count(value: object, name: str) -> int:
    """Accept ints (and integer-likes such as numpy ints), but not bools or floats: a count is never 2.5 or True."""
    if isinstance(value, bool):
        raise MetricsInputError(f"{name} must be an integer count, got the bool {value!r}")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise MetricsInputError(f"{name} must be an integer count, got {value!r} ({type(value).__name__})") from None


def check_counts(successes: object, trials: object, k: object) -> tuple[int, int, int]:
    """Validate (c, n, k) and return them as ints; every error names the offending value.

    >>> check_counts(2, 5, 3)
    (2, 5, 3)
    >>> check_counts(2, 3, 5)
    Traceback (most recent call last):
    ...
    pipeline.metrics.errors.MetricsInputError: k=5 exceeds the n=3 valid trials (pass@k and pass^k need n >= k)
    """
    c = as_count(successes, "successes")
    n = as_count(trials, "trials")
    kk = as_count(k, "k")
    if n < 0:
        raise MetricsInputError(f"trials must be >= 0, got n={n}")
    if c < 0:
        raise MetricsInputError(f"successes must be >= 0, got c={c}")
    if c > n:
        raise MetricsInputError(f"successes c={c} exceeds trials n={n}")
    if kk < 1:
        raise MetricsInputError(f"k must be >= 1, got k={kk}")
    if kk > n:
        raise MetricsInputError(f"k={kk} exceeds the n={n} valid trials (pass@k and pass^k need n >= k)")
    return c, n, kk


def pass_at_k(successes: int, trials: int, k: int) -> float:
    """Probability that at least one of k trials drawn without replacement from the n passes: 1 − C(n−c,k)/C(n,k).

    >>> pass_at_k(1, 4, 1)
    0.25
    >>> pass_at_k(1, 4, 2)   # 1 - C(3,2)/C(4,2) = 1 - 3/6
    0.5
    >>> pass_at_k(0, 10, 10), pass_at_k(10, 10, 3)
    (0.0, 1.0)
    """
    c, n, k = check_counts(successes, trials, k)
    total = comb(n, k)
    # One exact subtraction then one correctly rounded division: no cancellation when the ratio is close to 1.
    return (total - comb(n - c, k)) / total


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """Probability that all of k trials drawn without replacement from the n pass: C(c,k)/C(n,k).

    >>> pass_hat_k(3, 4, 2)   # C(3,2)/C(4,2) = 3/6
    0.5
    >>> pass_hat_k(2, 4, 3)
    0.0
    >>> pass_hat_k(4, 4, 4)
    1.0
    >>> 0.0 < pass_hat_k(900, 1000, 500) < 1e-30   # 300-digit binomials, still a finite, positive ratio
    True
    """
    c, n, k = check_counts(successes, trials, k)
    return comb(c, k) / comb(n, k)
