"""The cost / reliability Pareto frontier over several agents.

An agent is on the frontier when no other agent is at least as cheap and at least as reliable, and strictly
better on one of the two. Equal points do not dominate each other, so both stay.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from pipeline.metrics.errors import MetricsInputError


def dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """True when (cost, score) ``a`` is no worse than ``b`` on both axes and strictly better on one.

    >>> dominates((1.0, 0.8), (2.0, 0.8)), dominates((1.0, 0.8), (1.0, 0.8)), dominates((1.0, 0.5), (2.0, 0.8))
    (True, False, False)
    """
    return a[0] <= b[0] and a[1] >= b[1] and (a[0] < b[0] or a[1] > b[1])


def pareto_frontier(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """Names of the non-dominated agents, cheapest first; points are agent -> (cost, score such as pass^k).

    >>> pareto_frontier({"big": (10.0, 0.9), "small": (1.0, 0.6), "bad": (5.0, 0.5), "mid": (4.0, 0.8)})
    ['small', 'mid', 'big']
    """
    if not points:
        raise MetricsInputError("no agents: the Pareto frontier needs at least one (cost, score) point")
    clean: dict[str, tuple[float, float]] = {}
    for name, point in points.items():
        try:
            cost, score = (float(v) for v in point)
        except (TypeError, ValueError):
            raise MetricsInputError(f"agent {name!r}: point must be (cost, score) numbers, got {point!r}") from None
        if not (math.isfinite(cost) and math.isfinite(score)):
            raise MetricsInputError(f"agent {name!r}: cost and score must be finite, got {point!r}")
        clean[name] = (cost, score)
    front = [n for n, p in clean.items() if not any(dominates(q, p) for m, q in clean.items() if m != n)]
    return sorted(front, key=lambda n: (clean[n][0], -clean[n][1], n))
