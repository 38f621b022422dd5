"""The cost / pass^k Pareto frontier."""

from __future__ import annotations

import random

import pytest

from pipeline.metrics import MetricsInputError, dominates, pareto_frontier


def test_frontier_drops_dominated_agents_and_orders_by_cost():
    points = {
        "gpt-big": (12.0, 0.82),
        "small-sft": (0.4, 0.55),
        "small-base": (0.4, 0.31),  # same cost, less reliable
        "mid": (3.0, 0.70),
        "pricey-worse": (15.0, 0.80),  # more cost, less reliable than gpt-big
        "free": (0.0, 0.10),
    }
    assert pareto_frontier(points) == ["free", "small-sft", "mid", "gpt-big"]


def test_equal_points_both_stay_and_single_agent_is_the_frontier():
    assert pareto_frontier({"b": (1.0, 0.5), "a": (1.0, 0.5)}) == ["a", "b"]
    assert pareto_frontier({"only": (3, 0.2)}) == ["only"]


def test_frontier_properties_on_random_points():
    rng = random.Random(8)
    for _ in range(50):
        points = {f"a{i}": (round(rng.random() * 10, 1), round(rng.random(), 1)) for i in range(12)}
        front = pareto_frontier(points)
        rest = set(points) - set(front)
        assert not any(dominates(points[x], points[y]) for x in front for y in front)
        assert all(any(dominates(points[f], points[r]) for f in front) for r in rest)
        costs = [points[f][0] for f in front]
        assert costs == sorted(costs)


def test_pareto_errors_name_the_agent():
    with pytest.raises(MetricsInputError, match="no agents"):
        pareto_frontier({})
    with pytest.raises(MetricsInputError, match=r"agent 'x': cost and score must be finite"):
        pareto_frontier({"ok": (1.0, 0.5), "x": (float("nan"), 0.5)})
    with pytest.raises(MetricsInputError, match=r"agent 'y': point must be \(cost, score\)"):
        pareto_frontier({"y": (None, 0.5)})
    with pytest.raises(MetricsInputError, match=r"agent 'z': point must be"):
        pareto_frontier({"z": (1.0, 0.5, 3.0)})
