"""A domain with only tables, tools, identity, ownership and policy (tests/domains/library: no tasks, kit, oracle,
flaws, phrasing or generator) runs the loop on the generic path: its one world's customers split into evaluation
and training partitions, tasks and scripted participants grown from its tools by execution."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pipeline.authoring.partition import partition
from pipeline.cli import app
from pipeline.dataset.io import read_tasks
from pipeline.world.registry import load_world
from tests.domains.one_world import exp_run_one_world

SPEC = "tests.domains.library.domain:LIBRARY"
BASELINE = "flawed:invention=0.4,misread=0.4,plan_adherence=0.3"


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--domain", SPEC])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_loop_runs_on_a_domain_with_nothing_but_its_environment(tmp_path):
    world = load_world("library", SPEC)
    part = partition(world, 0)
    eval_tasks, base, cand = tmp_path / "eval.jsonl", tmp_path / "baseline", tmp_path / "candidate"
    _run("tasks", "generate", "--world", "library", "--n", "16", "--out", str(eval_tasks))
    held_out = read_tasks(eval_tasks)
    assert len(held_out) == 16 and {t.customer_user_id for t in held_out} <= part.eval
    for agent, out in ((BASELINE, base), ("oracle", cand)):
        _run("measure", "--world", "library", "--tasks", str(eval_tasks), "--agent", agent, "--trials", "2",
             "--out", str(out))  # fmt: skip
    targets = tmp_path / "targets.json"
    _run("target", "--metrics", str(base / "metrics.json"), "--budget", "12", "--out", str(targets),
         "--verdicts", str(base / "verdicts.jsonl"), "--tasks", str(eval_tasks))  # fmt: skip

    synth = tmp_path / "synth"
    _run("synthesize", "--world", "library", "--targets", str(targets), "--out", str(synth), "--generations", "3")
    tasks = read_tasks(synth / "tasks.jsonl")
    assert len(tasks) >= 12 and {t.customer_user_id for t in tasks} <= part.train  # never an evaluation customer
    assert {t.provenance.dials["partition"] for t in tasks} == {"train:0"}
    manifest = json.loads((synth / "manifest.json").read_text())
    assert manifest["counts"]["by_outcome"].get("refused") or manifest["counts"]["by_outcome"].get("mixed")

    curated = tmp_path / "curated"
    _run("curate", "--pool", str(synth / "trajectories.jsonl"), "--tasks", str(synth / "tasks.jsonl"), "--world",
         "library", "--agent", BASELINE, "--probes", "1", "--out", str(curated))  # fmt: skip
    assert json.loads((curated / "manifest.json").read_text())["pool"]["verified"] == len(tasks)

    gate = tmp_path / "gate.json"
    _run("gate", "--candidate", str(cand), "--champion", str(base), "--tasks", str(eval_tasks), "--world", "library",
         "--k", "2", "--resamples", "300", "--out", str(gate))  # fmt: skip
    decision = json.loads(gate.read_text())
    assert decision["pass_hat_k"]["candidate"] == 1.0 > decision["pass_hat_k"]["champion"]
    assert decision["outcome"] == "promote"


@pytest.mark.slow
def test_exp_run_runs_the_loop_on_it(tmp_path):
    """`dvc exp run` in a copy of the repository, every stage of the loop, with the library named in params."""
    repo = exp_run_one_world(tmp_path, SPEC, "library", BASELINE)
    synth = [json.loads(line) for line in (repo / "data" / "synth" / "tasks.jsonl").read_text().splitlines()]
    held = [json.loads(line) for line in (repo / "data" / "eval" / "tasks.jsonl").read_text().splitlines()]
    assert synth and not {t["customer_user_id"] for t in synth} & {t["customer_user_id"] for t in held}
    # no training input holds an evaluation customer: the anchors (trajectories: whom they authenticated) included
    evaluation = partition(load_world("library", SPEC)).eval
    anchors = [json.loads(line) for line in (repo / "data" / "synth" / "anchors.jsonl").read_text().splitlines()]
    authenticated = {e["authenticated_user_id"] for a in anchors for e in a["world_log"]} - {None}
    assert anchors and authenticated and not authenticated & evaluation
    assert not {t["customer_user_id"] for t in synth} & evaluation
    gate = json.loads((repo / "gate" / "gate.json").read_text())
    assert gate["promote"] is True and gate["pass_hat_k"]["candidate"] > gate["pass_hat_k"]["champion"]
