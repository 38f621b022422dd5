"""Metric, param and tag names the UI shows, computed without a store."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pipeline.tracking.records import (
    clean_key,
    curve_metrics,
    flatten_params,
    gate_metrics,
    params_digest,
    summary_metrics,
)
from tests.tracking.conftest import make_summary


def test_summary_metrics_cover_every_figure_with_prefix(summary):
    m = summary_metrics(summary, "candidate/")
    assert all(k.startswith("candidate/") for k in m)
    assert m["candidate/pass_at_1"] == 0.625
    assert [m[f"candidate/pass_hat_k/{k}"] for k in range(1, 5)] == [0.625, 0.5, 0.375, 0.25]
    assert [m[f"candidate/pass_at_k/{k}"] for k in range(1, 5)] == [0.625, 0.75, 0.75, 0.75]
    assert m["candidate/failure_mode/invention/trials"] == 0.375
    assert m["candidate/failure_mode/invention/tasks"] == 0.75
    assert m["candidate/failure_mode/misread/trials"] == 0.0
    assert m["candidate/diff/wrong_value/tasks"] == 0.75
    assert m["candidate/bucket/flipping"] == 0.5
    assert m["candidate/cost/cost_per_success"] == pytest.approx(0.016)
    assert m["candidate/looked_complete_share"] == 1.0
    assert (m["candidate/interval/pass_hat_4/low"], m["candidate/interval/pass_hat_4/high"]) == tuple(
        summary.intervals["pass_hat_4"]
    )


def test_undefined_cost_ratio_is_left_out_not_zeroed():
    s = make_summary("a", {"t-1": [False] * 4, "t-2": [False] * 4})
    m = summary_metrics(s)
    assert s.cost.cost_per_success is None
    assert "cost/cost_per_success" not in m
    assert m["cost/total_cost"] == pytest.approx(0.08)


def test_curves_are_step_series(summary):
    curves = curve_metrics(summary)
    assert curves["pass_hat_k"] == [(1, 0.625), (2, 0.5), (3, 0.375), (4, 0.25)]
    assert [k for k, _ in curves["pass_at_k"]] == [1, 2, 3, 4]


def test_gate_metrics_accept_the_interval_in_three_shapes():
    for decision in (
        {"promote": True, "interval": [0.02, 0.3], "reasons": ["ok"], "margin": 0.01, "note": "x"},
        {"promote": True, "interval": {"low": 0.02, "high": 0.3}, "reasons": ["ok"], "margin": 0.01},
        {"promote": True, "interval_low": 0.02, "interval_high": 0.3, "reasons": ["ok"], "margin": 0.01},
    ):
        m, tags = gate_metrics(decision)
        assert m == {"gate/promote": 1.0, "gate/interval_low": 0.02, "gate/interval_high": 0.3, "gate/margin": 0.01}
        assert tags == {"agentloop.decision": "promote", "agentloop.gate_reasons": "ok"}


def test_gate_decision_without_promote_is_rejected():
    with pytest.raises(ValidationError):
        gate_metrics({"interval": [0, 1]})


def test_params_flatten_and_digest():
    p = {"measure": {"k": 4, "agent": "oracle"}, "gate": {"margin": 0.0}}
    assert flatten_params(p) == {"measure.k": "4", "measure.agent": "oracle", "gate.margin": "0.0"}
    assert params_digest(p) != params_digest({**p, "gate": {"margin": 0.05}})
    assert clean_key("failure_mode/plan adherence@x") == "failure_mode/plan adherence_x"


def test_gate_metrics_of_an_inconclusive_gate():
    decision = {
        "promote": False,
        "outcome": "inconclusive",
        "reasons": ["inconclusive"],
        "pass_hat_k": {
            "low": -0.1,
            "high": 0.2,
            "diff": 0.05,
            "margin": 0.0,
            "se": 0.08,
            "mde": 0.22,
            "tasks_needed": 970,
        },
    }
    m, tags = gate_metrics(decision)
    assert tags["agentloop.decision"] == "inconclusive"
    assert (m["gate/pass_hat_k_mde"], m["gate/pass_hat_k_se"], m["gate/pass_hat_k_tasks_needed"]) == (0.22, 0.08, 970)
    assert gate_metrics({**decision, "outcome": "block"})[1]["agentloop.decision"] == "blocked"


def test_the_split_by_expected_outcome_is_logged_on_both_sides(summary):
    from pipeline.metrics import TrialRecord, summarize

    records = [
        TrialRecord(task_id=t, trial=i, template=t, expected=e, passed=e == "refuse")
        for t, e in (("a", "act"), ("r", "refuse"))
        for i in range(2)
    ]
    m = summary_metrics(summarize(records, agent="never-acts", max_k=2, resamples=50), "candidate/")
    assert (m["candidate/by_expected/act/pass_hat_k/2"], m["candidate/by_expected/refuse/pass_hat_k/2"]) == (0.0, 1.0)
    assert m["candidate/by_expected/act/tasks"] == 1.0
    assert not any("by_expected" in k for k in summary_metrics(summary))  # a run without the split: none
    decision = {
        "promote": False,
        "pass_hat_k": {"low": -0.1, "high": 0.2},
        "by_expected": {
            "act": {"tasks": 3, "candidate": 0.2, "champion": 0.5, "diff": -0.3, "low": -0.5, "high": -0.1},
            "refuse": {"tasks": 0, "candidate": None, "champion": None, "diff": None, "low": None, "high": None},
        },
    }
    gm, _ = gate_metrics(decision)
    assert (gm["gate/by_expected/act/diff"], gm["gate/by_expected/act/low"]) == (-0.3, -0.5)
    assert gm["gate/by_expected/refuse/tasks"] == 0.0 and "gate/by_expected/refuse/diff" not in gm
