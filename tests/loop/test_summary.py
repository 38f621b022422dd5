"""The CI job summary (`python -m pipeline.loop.summary`): the headline table of candidate against champion, the
gate's outcome, and what the registry did, including why `champion` stayed where a run may not move it; it reads
as a person would write it (changes in percentage points, tokens where unpriced, no Python literals)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pipeline.loop import paths
from pipeline.loop.summary import job_summary
from pipeline.metrics.headline import pp
from tests.tracking.conftest import make_summary

ROOT = Path(__file__).resolve().parents[2]


def _metrics(agent: str, pass_hat: float, misread: float) -> dict:
    return {
        "agent": agent,
        "tasks": 24,
        "trials_per_task": 2,
        "pass_hat_k": {"1": pass_hat + 0.1, "2": pass_hat},
        "failure_modes": {"misread": {"trials": misread}},
        "cost": {"currency": "USD", "cost_per_success": None},
    }


def _loop_outputs(root: Path, *, allowed: bool) -> None:
    for name, metrics in (("baseline", _metrics("flawed", 0.5, 0.4)), ("candidate", _metrics("oracle", 1.0, 0.0))):
        (root / "runs" / name).mkdir(parents=True)
        (root / "runs" / name / "metrics.json").write_text(json.dumps(metrics))
    (root / "gate").mkdir()
    shutil.copy(ROOT / "gate" / "gate.json", root / "gate" / "gate.json")  # the committed decision: promote
    promotion = {
        "iteration": 2,
        "model_version": "3",
        "champion_moved": allowed,
        "promotion_allowed": allowed,
        "promoted": True,
    }
    (root / "gate" / "promotion.json").write_text(json.dumps(promotion))


def test_the_headline_table_gate_and_registry(tmp_path):
    _loop_outputs(tmp_path, allowed=True)
    text = job_summary(tmp_path)
    lines = text.splitlines()
    assert "| metric | champion | candidate | change |" in lines
    assert any(line.startswith("| pass^2 | 50.0% | 100.0% |") for line in lines), text
    assert any(line.startswith("| misread (share of trials) | 40.0% | 0.0% |") for line in lines), text
    gain = json.loads((ROOT / "gate" / "gate.json").read_text())["pass_hat_k"]  # the committed decision
    interval = f"interval {pp(gain['low'])} … {pp(gain['high'])}"
    assert any(line.startswith("Gate: **PROMOTE**") and interval in line for line in lines), text
    assert "Registry: version 3 is `challenger`; `champion` moved to the candidate." in lines
    assert any(line.startswith("Iteration 2 (its number from the registry") for line in lines), text


def test_a_run_that_may_not_promote_says_why_champion_stayed(tmp_path):
    _loop_outputs(tmp_path, allowed=False)
    assert "`champion` unchanged (promotion off: only a push to main moves it)." in job_summary(tmp_path)


def test_without_both_measurements_the_summary_points_at_the_log(tmp_path):
    assert "did not produce both measurements" in job_summary(tmp_path)


def test_the_job_summary_has_points_tokens_and_no_python_literals(tmp_path):
    base = make_summary("flawed", {"a-1": [True, False, False, False], "a-2": [True] * 4})
    cand = make_summary("trained", {"a-1": [True, True, True, False], "a-2": [True] * 4})
    for run, s in ((paths.BASELINE_RUN, base), (paths.CANDIDATE_RUN, cand)):
        (tmp_path / run).mkdir(parents=True)
        (tmp_path / run / "metrics.json").write_text(s.model_dump_json())
    gate = {
        "outcome": "block",
        "promote": False,
        "reasons": ["r"],
        "pass_hat_k": {"k": 4, "diff": 0.0, "low": -0.25, "high": 0.5, "margin": 0.0},
    }
    (tmp_path / paths.GATE).parent.mkdir(parents=True)
    (tmp_path / paths.GATE).write_text(json.dumps(gate))
    text = job_summary(tmp_path)
    assert "| pass^1 | 62.5% | 87.5% | +25.0 pp |" in text and "| pass^4 | 50.0% | 50.0% | +0.0 pp |" in text
    assert "| agent tokens per success (not priced) |" in text and "USD" not in text
    assert "gain +0.0 pp (interval -25.0 pp … +50.0 pp, margin +0.0 pp)" in text
    assert not any(word in text for word in ("None", "True", "False"))
