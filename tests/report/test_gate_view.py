"""Reading gate.json: exactly when `agentloop gate` wrote it, leniently for other shapes."""

from __future__ import annotations

import json
from pathlib import Path

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


def _inconclusive_gate(tmp_path, runs=None):
    """The committed gate.json turned into an inconclusive decision, with what the gate could have seen."""
    raw = json.loads((Path(__file__).resolve().parents[2] / "gate" / "gate.json").read_text())
    raw["promote"], raw["outcome"] = False, "inconclusive"
    if runs is not None:  # a decision about these runs, as `agentloop gate` would have recorded it
        from pipeline.gate.load import sha256_file

        raw["inputs"]["candidate"]["trajectories_sha256"] = sha256_file(runs.candidate / "trajectories.jsonl")
        raw["inputs"]["champion"]["trajectories_sha256"] = sha256_file(runs.baseline / "trajectories.jsonl")
        raw["inputs"]["tasks_sha256"] = sha256_file(runs.tasks)
    raw["pass_hat_k"].update(low=-0.05, high=0.4, se=0.09, mde=0.252, power=0.8, min_effect=0.1, tasks_needed=1270)
    raw["reasons"][0] = "inconclusive: the interval straddles the margin"
    path = tmp_path / "gate.json"
    path.write_text(json.dumps(raw))
    return path


def test_inconclusive_gate_json_says_what_it_could_have_seen(tmp_path):
    view = read_gate(_inconclusive_gate(tmp_path))
    assert (view.promote, view.outcome, view.decision) == (False, "inconclusive", "inconclusive")
    assert (view.mde, view.power, view.min_effect, view.tasks_needed) == (0.252, 0.8, 0.1, 1270)
    assert "+0.252" in view.sensitivity and "80% power" in view.sensitivity
    assert "about 1270 held-out tasks" in view.sensitivity
    # an older gate.json (no MDE) reads as before, with its outcome from `promote`
    raw = json.loads((Path(__file__).resolve().parents[2] / "gate" / "gate.json").read_text())
    raw.pop("outcome", None)
    for key in ("mde", "se", "tasks_needed", "power", "min_effect"):
        raw["pass_hat_k"].pop(key, None)
    (tmp_path / "old.json").write_text(json.dumps(raw))
    old = read_gate(tmp_path / "old.json")
    assert old.outcome == "promote" and old.mde is None and old.sensitivity is None


def test_lenient_outcome_and_mde():
    v = gate_view({"outcome": "inconclusive", "mde": 0.2, "power": 0.8, "margin": 0.0, "min_effect": 0.1})
    assert v.promote is False and v.outcome == "inconclusive" and v.mde == 0.2
    assert "+0.100 (margin + min_effect)" in v.sensitivity
    assert gate_view({"outcome": "sideways"}).outcome is None


def test_report_shows_an_inconclusive_gate(runs, tmp_path):
    from pipeline.report import build_report

    from .conftest import WORLD

    out = build_report(
        runs.baseline,
        runs.candidate,
        runs.tasks,
        WORLD,
        gate_json=_inconclusive_gate(tmp_path, runs),
        out=tmp_path / "r.html",
    )
    html = out.read_text()
    assert 'class="badge inconclusive"' in html and "INCONCLUSIVE" in html
    assert "about 1270 held-out tasks" in html and "minimum detectable effect at 80% power" in html
