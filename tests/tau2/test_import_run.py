"""`agentloop import tau2-run`: τ²-bench results files (fixtures in its data model) → run directories that gate and
report read, re-graded with both verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.gate import GateConfig, decide
from pipeline.report import build_report
from pipeline.report.inputs import load_run
from pipeline.report.verdicts import disagreements
from pipeline.tau2.import_run import Tau2ImportError, import_run, termination_of

DATA = Path(__file__).resolve().parents[1] / "data"
RETAIL = DATA / "tau2_results_retail.json"
AIRLINE = DATA / "tau2_results_airline.json"


@pytest.fixture(scope="module")
def retail_run(tmp_path_factory, tau2_dir):
    out = tmp_path_factory.mktemp("runs") / "retail"
    return out, import_run(RETAIL, tau2_dir, out)


def test_import_writes_the_measure_layout_and_agrees_with_the_recorded_rewards(retail_run):
    out, record = retail_run
    for name in (
        "trajectories.jsonl",
        "verdicts.jsonl",
        "metrics.json",
        "per_task.csv",
        "tasks.jsonl",
        "tau2_import.json",
    ):
        assert (out / name).exists(), name
    assert record["trials"] == 8 and record["tasks"] == 4 and record["criteria_from"] == "results file"
    assert record["upstream_agreement"] == record["upstream_rewards"] == 8
    assert record["tau2_passes"] == 4 and record["strict_passes"] == 5  # max_steps: strict pass, τ² 0
    assert record["tool_outcomes_differing"] == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["agent"] == "tau2:gold-agent" and metrics["trials_per_task"] == 2
    rows = [json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()]
    assert all(r["verdict"]["tau2"] is not None for r in rows)


def test_the_report_shows_where_the_verdicts_disagree(retail_run, tmp_path):
    out, _ = retail_run
    rows, both = disagreements(load_run(out))
    assert both == 8 and [(d.task_id, d.trial, d.strict, d.tau2, d.why) for d in rows] == [
        ("5", 1, True, False, "τ²: termination")
    ]
    page = build_report(out, out, out / "tasks.jsonl", "tau2_retail", out=tmp_path / "r.html", verdict="tau2")
    html = page.read_text()
    assert "1 of 8 trials disagree" in html and "passes by the tau2 verdict" in html


def test_gate_compares_two_imported_runs_under_either_verdict(retail_run, tau2_dir, tmp_path):
    base, _ = retail_run
    # the candidate: every trial as the gold (pass) trial of its task
    data = json.loads(RETAIL.read_text())
    gold = {s["task_id"]: s for s in data["simulations"] if s["trial"] == 0}
    data["simulations"] = [{**gold[s["task_id"]], "trial": s["trial"], "id": s["id"]} for s in data["simulations"]]
    better = tmp_path / "better.json"
    better.write_text(json.dumps(data))
    cand = tmp_path / "cand"
    import_run(better, tau2_dir, cand)
    strict = decide(cand, base, base / "tasks.jsonl", str(tau2_dir), GateConfig(k=2, resamples=200))
    tau2 = decide(cand, base, base / "tasks.jsonl", str(tau2_dir), GateConfig(k=2, resamples=200, verdict="tau2"))
    assert tau2.inputs.champion.passes == 4 and tau2.inputs.candidate.passes == 8
    assert strict.inputs.champion.passes == 5 and strict.inputs.candidate.passes == 8
    assert tau2.pass_hat_k.champion == 0.0 and strict.pass_hat_k.champion == 0.25  # task 5: max_steps passes strict
    assert tau2.pass_hat_k.diff == 1.0 > strict.pass_hat_k.diff > 0


def test_airline_import(tau2_airline_dir, tmp_path):
    record = import_run(AIRLINE, tau2_airline_dir, tmp_path / "air", verdict="tau2")
    assert record["upstream_agreement"] == 8 and record["tau2_passes"] == 4
    assert json.loads((tmp_path / "air" / "metrics.json").read_text())["pass_at_1"] == 0.5


def test_terminations_map_to_ours():
    assert termination_of("user_stop") == "user_stop" and termination_of("agent_stop") == "agent_stop"
    assert (
        termination_of("max_steps")
        == termination_of("too_many_errors")
        == termination_of("agent_error")
        == "turn_limit"
    )
    assert termination_of("infrastructure_error") == "infra_error"


def _write(tmp_path: Path, data) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_bad_results_files_are_named(tmp_path, tau2_dir):
    with pytest.raises(Tau2ImportError, match="invalid JSON at line 1"):
        import_run(_write(tmp_path, "{nope"), tau2_dir, tmp_path / "o")
    with pytest.raises(Tau2ImportError, match="field simulations: Field required"):
        import_run(_write(tmp_path, {"tasks": []}), tau2_dir, tmp_path / "o")
    sim = json.loads(RETAIL.read_text())["simulations"][0]
    with pytest.raises(Tau2ImportError, match=r"simulations\[0\].task_id: 'zzz' is not a task"):
        import_run(_write(tmp_path, {"simulations": [{**sim, "task_id": "zzz"}]}), tau2_dir, tmp_path / "o")
    with pytest.raises(Tau2ImportError, match=r"simulations\[1\]: task '0' trial 0 appears twice"):
        import_run(_write(tmp_path, {"simulations": [sim, sim]}), tau2_dir, tmp_path / "o")
    odd = {**sim, "messages": [{"role": "narrator", "content": "hi"}]}
    with pytest.raises(Tau2ImportError, match=r"messages\[0\].role: unknown role 'narrator'"):
        import_run(_write(tmp_path, {"simulations": [odd]}), tau2_dir, tmp_path / "o")


def test_without_tasks_in_the_file_the_domain_criteria_are_used(tmp_path, tau2_dir):
    data = json.loads(RETAIL.read_text())
    record = import_run(_write(tmp_path, {**data, "tasks": []}), tau2_dir, tmp_path / "o")
    assert record["criteria_from"] == "domain tasks.json" and record["upstream_agreement"] == 8


def test_cli(tmp_path, tau2_dir):
    runner = CliRunner()
    ok = runner.invoke(
        app, ["import", "tau2-run", str(RETAIL), "--domain", str(tau2_dir), "--out", str(tmp_path / "r")]
    )
    assert ok.exit_code == 0, ok.output
    assert "equals the file's on 8/8" in ok.output
    bad = runner.invoke(
        app, ["import", "tau2-run", str(tmp_path / "none.json"), "--domain", str(tau2_dir), "--out", "x"]
    )
    assert bad.exit_code == 2 and "file not found" in bad.output
    gate = runner.invoke(
        app,
        ["gate", "--candidate", str(tmp_path / "r"), "--tasks", str(tmp_path / "r" / "tasks.jsonl"), "--world",
         str(tau2_dir), "--k", "2", "--verdict", "tau2", "--resamples", "200", "--out", str(tmp_path / "g.json")],
    )  # fmt: skip
    assert gate.exit_code == 0, gate.output
    assert json.loads((tmp_path / "g.json").read_text())["inputs"]["config"]["verdict"] == "tau2"
