"""Jeffreys difficulty bands: the incomplete beta against closed forms, and the issue's worked example."""

from __future__ import annotations

import math
import random

import pytest
from pydantic import ValidationError

from pipeline.curate.bands import Bands, betainc
from tests.needs import need_module


def test_three_passes_in_eight_probes():
    """Beta(3.5, 5.5): about 54% of its mass in 0.08–0.40, the largest band's, so the task is kept."""
    masses = Bands().masses(3, 8)
    assert masses == pytest.approx([0.0071957, 0.5396248, 0.4260610, 0.0270116, 0.0001069], abs=1e-6)
    assert sum(masses) == pytest.approx(1.0)
    assert Bands().band(3, 8) == 1 and Bands().keep(3, 8)


def test_closed_forms():
    for x in (0.01, 0.08, 0.4, 0.7, 0.9, 0.99):
        assert betainc(0.5, 0.5, x) == pytest.approx(2 / math.pi * math.asin(math.sqrt(x)), abs=1e-12)  # arcsine
        assert betainc(1.0, 1.0, x) == pytest.approx(x, abs=1e-12)
        assert betainc(3.0, 1.0, x) == pytest.approx(x**3, abs=1e-12)
        assert betainc(1.0, 4.0, x) == pytest.approx(1 - (1 - x) ** 4, abs=1e-12)
        assert betainc(2.5, 4.5, x) == pytest.approx(1 - betainc(4.5, 2.5, 1 - x), abs=1e-12)  # symmetry


def test_matches_scipy_where_available():
    stats = need_module("scipy.stats", install='pip install -e ".[dev]"')
    rng = random.Random(0)
    for _ in range(500):
        a, b, x = rng.uniform(0.5, 80), rng.uniform(0.5, 80), rng.random()
        assert betainc(a, b, x) == pytest.approx(float(stats.beta.cdf(x, a, b)), abs=1e-10)


def test_extremes_are_dropped_and_custom_edges():
    bands = Bands()
    assert not bands.keep(0, 8) and bands.band(0, 8) == 0  # too hard
    assert not bands.keep(8, 8) and bands.band(8, 8) == 4  # too easy
    assert all(bands.keep(c, 8) for c in range(1, 8))
    coarse = Bands(edges=[0.0, 0.2, 0.8, 1.0])
    assert coarse.labels() == ["0-0.2", "0.2-0.8", "0.8-1"] and coarse.keep(4, 8) and not coarse.keep(0, 8)
    for bad in ([0.0, 0.5, 1.0], [0.1, 0.4, 0.7, 1.0], [0.0, 0.5, 0.4, 1.0]):
        with pytest.raises(ValidationError):
            Bands(edges=bad)
    with pytest.raises(ValueError):
        bands.masses(9, 8)


def test_one_probe_keeps_a_failure_and_drops_a_pass():
    """The loop probes once (params.yaml): a failure is kept as a target, a pass is too easy; two failures are not.

    Beta(0.5, 1.5) puts 39.3% in 0.08–0.40 against 35.5% below 0.08; Beta(1.5, 0.5) puts 39.6% in 0.9–1.
    """
    bands = Bands()
    assert bands.masses(0, 1)[:2] == pytest.approx([0.355, 0.393], abs=1e-3)
    assert bands.band(0, 1) == 1 and bands.keep(0, 1)
    assert bands.band(1, 1) == 4 and not bands.keep(1, 1)
    assert bands.band(0, 2) == 0 and not bands.keep(0, 2)  # with two probes, failing both reads "too hard"
