"""`agentloop gate-aa RUN_A RUN_B` and `aa_check` on real measure runs; the inconclusive exit code of `gate`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.gate import GateConfig, decide
from pipeline.gate.aa import aa_check
from pipeline.measure import MeasureConfig, measure

from .conftest import N_TASKS, WORLD

runner = CliRunner()
NOISY = "flawed:plan_adherence=0.2,invention=0.2,misread=0.2,seed={seed}"  # tasks pass some trials, not all


@pytest.fixture(scope="module")
def noisy(runs, tmp_path_factory):
    """One flawed agent measured twice (seeds 1 and 2): the per-task pass^4 differs by trial noise alone."""
    root = tmp_path_factory.mktemp("aa_runs")
    for seed in (1, 2):
        agent = NOISY.format(seed=seed)
        measure(MeasureConfig(world=WORLD, tasks=runs.tasks, agent=agent, trials=4, resamples=100), root / f"s{seed}")
    return root / "s1", root / "s2"


def _aa(runs, a, b, out, *extra):
    args = ["gate-aa", str(a), str(b), "--tasks", str(runs.tasks), "--world", WORLD, "--out", str(out)]
    return runner.invoke(app, args + list(extra))


def test_one_agent_twice_is_not_promoted_over_itself(runs, noisy, tmp_path):
    out = tmp_path / "aa.json"
    result = _aa(runs, *noisy, out, "--check")
    assert result.exit_code == 0, result.output
    assert "no false promotion" in result.output and "A over B" in result.output and "B over A" in result.output
    aa = json.loads(out.read_text())
    assert aa["false_promotion"] is False and aa["n_tasks"] == N_TASKS
    a_over_b, b_over_a = aa["directions"]
    assert (a_over_b["candidate"], b_over_a["candidate"]) == ("A", "B")
    assert a_over_b["pass_hat_k"]["diff"] == -b_over_a["pass_hat_k"]["diff"]
    for d in aa["directions"]:
        assert not d["promote"] and d["outcome"] in ("block", "inconclusive")
        assert d["pass_hat_k"]["mde"] > 0.0 and d["pass_hat_k"]["power"] == 0.8
    # the seeded agent names its seed, so the check warns that the names differ
    assert aa["same_agent"] is False and "different agents" in result.output
    assert aa["run_a"]["dir"] == str(noisy[0]) and aa["run_b"]["dir"] == str(noisy[1])


def test_a_run_against_itself(runs):
    check = aa_check(runs.weak, runs.weak, runs.tasks, runs.world)
    assert check.same_agent and not check.false_promotion
    # no spread at all: nothing says what the gate could have seen, so it is no finding either way
    assert all(d.outcome == "inconclusive" and d.pass_hat_k.se == 0.0 for d in check.directions)
    assert all(d.pass_hat_k.mde is None for d in check.directions)


def test_a_real_difference_is_reported_as_a_false_promotion(runs, tmp_path):
    out = tmp_path / "aa.json"
    result = _aa(runs, runs.weak, runs.oracle, out, "--check")  # not an A/A pair: the check says so
    assert result.exit_code == 1, result.output
    aa = json.loads(out.read_text())
    assert aa["false_promotion"] is True
    assert [d["outcome"] for d in aa["directions"]] == ["block", "promote"]
    assert "FALSE PROMOTION" in result.output


def test_config_file_and_bad_inputs(runs, tmp_path):
    config = tmp_path / "gate.yaml"
    config.write_text("k: 2\nmin_effect: 0.5\nresamples: 500\n")
    out = tmp_path / "aa.json"
    result = _aa(runs, runs.weak, runs.weak_reseeded, out, "--config", str(config))
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["config"]["min_effect"] == 0.5
    config.write_text("k: 2\npower: 1.5\n")
    bad = _aa(runs, runs.weak, runs.weak_reseeded, tmp_path / "x.json", "--config", str(config))
    assert bad.exit_code == 2 and "power" in bad.output and "gate.yaml" in bad.output
    config.write_text("k: [2\n")
    assert _aa(runs, runs.weak, runs.weak_reseeded, tmp_path / "x.json", "--config", str(config)).exit_code == 2
    missing = _aa(runs, runs.weak, tmp_path / "no_such_run", tmp_path / "x.json")
    assert missing.exit_code == 2 and "not a run directory" in missing.output
    assert not (tmp_path / "x.json").exists()


def test_gate_check_exits_three_when_inconclusive(runs, noisy, tmp_path):
    decision = decide(*noisy, runs.tasks, runs.world)
    p = decision.pass_hat_k
    assert decision.outcome == "inconclusive", (p, decision.reasons)
    assert p.low <= 0.0 < p.high and p.mde > p.margin + p.min_effect and p.tasks_needed > N_TASKS
    out = tmp_path / "gate.json"
    args = ["gate", "--candidate", str(noisy[0]), "--champion", str(noisy[1])]
    args += ["--tasks", str(runs.tasks), "--world", WORLD, "--out", str(out), "--check"]
    result = runner.invoke(app, args)
    assert result.exit_code == 3, result.output
    assert "INCONCLUSIVE" in result.output and "MDE" in result.output
    assert json.loads(out.read_text())["outcome"] == "inconclusive"
    # asked to see only a large gain, the same evaluation is powered for it: a block (exit 1)
    assert runner.invoke(app, args + ["--min-effect", "0.9"]).exit_code == 1
    assert decide(*noisy, runs.tasks, runs.world, GateConfig(min_effect=0.9)).outcome == "block"
