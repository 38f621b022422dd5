"""Difficulty bands from probes: the Jeffreys posterior of a task's success rate, and where its mass lies.

After c passes in n probes the success probability has the Jeffreys posterior Beta(c + ½, n − c + ½). Its
mass in each band comes from the regularized incomplete beta function, implemented here (a continued
fraction, as in Numerical Recipes §6.4) so curation needs no scipy. A task is worth training on when its
largest mass is in a middle band: neither always solved nor hopeless.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, field_validator

DEFAULT_EDGES: tuple[float, ...] = (0.0, 0.08, 0.40, 0.70, 0.90, 1.0)
_TINY, _EPS, _MAX_ITER = 1e-300, 1e-15, 500


def _continued_fraction(a: float, b: float, x: float) -> float:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_ITER):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) = P(X ≤ x) for X ~ Beta(a, b).

    >>> round(betainc(1.0, 1.0, 0.3), 12)
    0.3
    >>> round(betainc(2.0, 3.0, 0.5), 12)  # P(Beta(2, 3) <= 1/2) = 11/16
    0.6875
    """
    if a <= 0 or b <= 0:
        raise ValueError("betainc needs a > 0 and b > 0")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = a * math.log(x) + b * math.log1p(-x) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _continued_fraction(a, b, x) / a
    return 1.0 - front * _continued_fraction(b, a, 1.0 - x) / b


class Bands(BaseModel):
    """Band edges over [0, 1]; the first and last band are 'too hard' and 'too easy', the rest are kept."""

    model_config = ConfigDict(extra="forbid")

    edges: list[float] = Field(default_factory=lambda: list(DEFAULT_EDGES), description="Increasing, 0 to 1.")

    @field_validator("edges")
    @classmethod
    def _valid(cls, v: list[float]) -> list[float]:
        if len(v) < 4 or v[0] != 0.0 or v[-1] != 1.0 or any(b <= a for a, b in zip(v, v[1:], strict=False)):
            raise ValueError("edges must increase from 0 to 1 and make at least 3 bands")
        return v

    def labels(self) -> list[str]:
        return [f"{a:g}-{b:g}" for a, b in zip(self.edges, self.edges[1:], strict=False)]

    def masses(self, passes: int, n: int) -> list[float]:
        """Posterior mass of each band after `passes` in `n` probes (Jeffreys prior)."""
        if not 0 <= passes <= n:
            raise ValueError(f"passes must be within 0..n, got {passes} of {n}")
        a, b = passes + 0.5, n - passes + 0.5
        cdf = [betainc(a, b, e) for e in self.edges]
        return [max(0.0, hi - lo) for lo, hi in zip(cdf, cdf[1:], strict=False)]

    def band(self, passes: int, n: int) -> int:
        """Index of the band holding the largest posterior mass."""
        m = self.masses(passes, n)
        return max(range(len(m)), key=lambda i: m[i])

    def keep(self, passes: int, n: int) -> bool:
        return 0 < self.band(passes, n) < len(self.edges) - 2
