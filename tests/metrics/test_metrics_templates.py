"""pass@1 and pass^k per task template."""

from __future__ import annotations

import pytest

from pipeline.metrics import NO_TEMPLATE, by_template


def test_figures_are_means_over_each_templates_tasks():
    counts = {"a1": (2, 2), "a2": (1, 2), "b1": (0, 2), "x": (2, 2), "short": (1, 1)}
    templates = {"a1": "cancel", "a2": "cancel", "b1": "return", "short": "return"}
    got = by_template(counts, templates, 2)
    assert list(got) == [NO_TEMPLATE, "cancel", "return"]
    assert got["cancel"].tasks == 2
    assert got["cancel"].pass_at_1 == pytest.approx(0.75)
    assert got["cancel"].pass_hat_k == pytest.approx(0.5)  # (1 + 0) / 2
    assert got["return"].tasks == 2
    assert got["return"].pass_at_1 == pytest.approx(0.5)  # (0 + 1) / 2
    assert got["return"].pass_hat_k == 0.0  # only b1 has 2 valid trials
    assert got[NO_TEMPLATE].pass_hat_k == 1.0


def test_a_template_without_valid_trials_has_no_figures():
    got = by_template({"a": (0, 0)}, {"a": "cancel"}, 2)
    assert got["cancel"].tasks == 1 and got["cancel"].pass_at_1 is None and got["cancel"].pass_hat_k is None
