"""`agentloop gate`: the table, gate.json, and exit codes for CI (0 promote, 1 blocked with --check, 2 bad input)."""

from __future__ import annotations

from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.gate import read_gate

from .conftest import WORLD

runner = CliRunner()


def _gate(runs, candidate, champion, out, *extra):
    args = ["gate", "--candidate", str(candidate), "--tasks", str(runs.tasks), "--world", WORLD, "--out", str(out)]
    if champion is not None:
        args += ["--champion", str(champion)]
    return runner.invoke(app, args + list(extra))


def test_check_exits_zero_when_promoted(runs, tmp_path):
    out = tmp_path / "gate.json"
    result = _gate(runs, runs.oracle, runs.weak, out, "--check")
    assert result.exit_code == 0, result.output
    assert "PROMOTE" in result.output and "pass^4" in result.output and "misread" in result.output
    assert read_gate(out).promote


def test_check_exits_one_when_blocked(runs, tmp_path):
    out = tmp_path / "gate.json"
    blocked = _gate(runs, runs.weak, runs.oracle, out, "--check")
    assert blocked.exit_code == 1, blocked.output
    assert "BLOCKED" in blocked.output and "no demonstrated pass^4 improvement" in blocked.output
    assert not read_gate(out).promote
    assert _gate(runs, runs.weak, runs.oracle, out).exit_code == 0  # without --check the decision is only reported


def test_options_reach_the_config(runs, tmp_path):
    out = tmp_path / "gate.json"
    result = _gate(runs, runs.oracle, None, out, "--k", "3", "--margin", "0.99", "--seed", "7", "--alpha", "0.01")
    assert result.exit_code == 0, result.output
    config = read_gate(out).inputs.config
    assert (config.k, config.margin, config.seed, config.alpha) == (3, 0.99, 7, 0.01)
    assert read_gate(out).promote  # oracle: pass^3 = 1 everywhere, lower bound 1.0 > 0.99


def test_bad_inputs_exit_two_with_a_message(runs, tmp_path):
    missing = _gate(runs, runs.oracle, tmp_path / "no_such_run", tmp_path / "gate.json", "--check")
    assert missing.exit_code == 2
    assert "not a run directory" in missing.output
    mismatch = _gate(runs, runs.oracle, runs.oracle_first20, tmp_path / "gate.json")
    assert mismatch.exit_code == 2 and "were not measured" in mismatch.output
    bad_config = _gate(runs, runs.oracle, runs.weak, tmp_path / "gate.json", "--confidence", "1.5")
    assert bad_config.exit_code == 2 and "confidence" in bad_config.output
    assert not (tmp_path / "gate.json").exists()
