"""The whole loop on τ²-bench airline through `dvc exp run`, with scripted participants, in a temporary copy of the
repository: every stage from held-out tasks to promotion runs, the embedded (retail) model's stages do not, and
the same command again runs nothing."""

import json
import re
import shlex
import time

import pytest

from tests.loop.loop_helpers import ROOT, copy_repo, dvc

# The loop's stages in order: `--single-item` runs each as named and none of the embedded model's stages.
AIRLINE_STAGES = (
    "eval_tasks",
    "baseline",
    "measure",
    "target",
    "synthesize",
    "curate",
    "train",
    "remeasure",
    "gate",
    "report",
    "promote",
)


def airline_overrides(world: str) -> list[str]:
    """The `dvc exp run` overrides of the small airline loop in docs/domains.md: held-out tasks in τ²-bench's airline
    database (`world`, a directory), training data from a generated airline world."""
    sets = {
        "world.domain": "airline",
        "world.eval_world": world,
        "world.train_world": "gen-7",
        "world.eval_tasks": "24",
        "baseline.source": '"agent:flawed:plan_adherence=0.4,invention=0.4,misread=0.4"',
        "train.method": "agent:oracle",
        "measure.trials": "2",
        "measure.executor": "serial",
        "measure.resamples": "200",
        "target.budget": "16",
        "synthesize.anchors": "20",
        "curate.probes": "2",
        "curate.executor": "serial",
        "gate.k": "2",
        "gate.resamples": "500",
    }
    return [arg for key, value in sets.items() for arg in ("-S", f"{key}={value}")]


def test_the_docs_show_this_command():
    """docs/domains.md's command is the one the slow test runs (with the airline data where the docs put it)."""
    section = (ROOT / "docs" / "domains.md").read_text().split("## The loop on airline", 1)[1]
    command = re.search(r"```bash\n(.*?)```", section, flags=re.S).group(1).replace("\\\n", " ")
    args = shlex.split(command)
    assert args[:4] == ["dvc", "exp", "run", "--single-item"]
    stages = tuple(a for a in args[4:] if "=" not in a and a != "-S")
    assert stages == AIRLINE_STAGES
    overrides = [a for a in args[4:] if a not in stages]
    assert overrides == airline_overrides("../shared/tau2_airline")


@pytest.mark.slow
def test_exp_run_runs_the_airline_loop(tau2_airline_dir, tmp_path):
    world = tau2_airline_dir
    repo = copy_repo(tmp_path)
    start = time.monotonic()
    run = dvc(repo, "exp", "run", "--single-item", *airline_overrides(str(world)), *AIRLINE_STAGES, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for stage in AIRLINE_STAGES:
        assert f"Running stage '{stage}'" in run.stdout, stage
    assert "Running stage 'embedded" not in run.stdout  # the retail model is not built, nor needed
    tasks = [json.loads(line) for line in (repo / "data" / "eval" / "tasks.jsonl").read_text().splitlines()]
    assert len(tasks) == 24 and {t["world"] for t in tasks} == {"tau2_airline"}
    recorded = {json.loads(line)["domain"] for line in (repo / "runs/baseline/trajectories.jsonl").open()}
    assert recorded == {"airline"}
    synth = json.loads((repo / "data" / "synth" / "manifest.json").read_text())
    assert synth["tasks"] >= 16 and synth["flaw_check"]
    assert {json.loads(line)["world"] for line in (repo / "data/synth/tasks.jsonl").open()} == {"gen-7"}
    gate = json.loads((repo / "gate" / "gate.json").read_text())
    assert gate["promote"] is True and gate["pass_hat_k"]["candidate"] > gate["pass_hat_k"]["champion"]
    promotion = json.loads((repo / "gate" / "promotion.json").read_text())
    assert promotion["promoted"] is True and promotion["candidate"] == "oracle"
    assert (repo / "report" / "report.html").stat().st_size > 10_000
    assert time.monotonic() - start < 600
    again = dvc(repo, "exp", "run", "--single-item", *airline_overrides(str(world)), *AIRLINE_STAGES)
    assert "Running stage" not in again.stdout  # world.domain and the rest recorded: nothing left to do
