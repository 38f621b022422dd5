"""Reading gate.json: exactly when `agentloop gate` wrote it, leniently for other shapes."""

from __future__ import annotations

import json

import pytest

from pipeline.report.gate_view import gate_view, read_gate
from pipeline.report.inputs import ReportInputError


def test_real_gate_json(runs):
    view = read_gate(runs.gate)
    raw = json.loads(runs.gate.read_text())
    assert view.promote is raw["promote"] is True
    p = view.primary
    assert (p.low, p.high, p.estimate) == (
        raw["pass_hat_k"]["low"],
        raw["pass_hat_k"]["high"],
        raw["pass_hat_k"]["diff"],
    )
    assert view.margin == raw["pass_hat_k"]["margin"]
    assert view.reasons == raw["reasons"] and len(view.tests) == len(raw["tests"])
    assert "pass^2" in view.headline and f"{p.low:+.3f}" in view.headline


def test_lenient_shapes():
    v = gate_view(
        {
            "decision": "blocked",
            "reasons": "lower bound below margin",
            "config": {"margin": 0.05},
            "intervals": {"pass@1": [0.1, 0.2], "pass_hat_4_diff": {"diff": 0.02, "lower": -0.03, "upper": 0.07}},
        }
    )
    assert v.promote is False and v.reasons == ["lower bound below margin"] and v.margin == 0.05
    assert v.primary.name == "intervals.pass_hat_4_diff" and (v.primary.low, v.primary.estimate) == (-0.03, 0.02)
    assert {iv.name for iv in v.intervals} == {"intervals.pass@1", "intervals.pass_hat_4_diff"}
    v = gate_view({"promote": True})
    assert v.promote and v.primary is None and v.decision == "promote"
    assert gate_view({"decision": "maybe"}).promote is None


def test_bad_gate_files(tmp_path):
    with pytest.raises(ReportInputError, match="not found"):
        read_gate(tmp_path / "gate.json")
    (tmp_path / "gate.json").write_text("[1, 2]")
    with pytest.raises(ReportInputError, match="JSON object"):
        read_gate(tmp_path / "gate.json")
    (tmp_path / "gate.json").write_text("{oops")
    with pytest.raises(ReportInputError, match="not JSON"):
        read_gate(tmp_path / "gate.json")
