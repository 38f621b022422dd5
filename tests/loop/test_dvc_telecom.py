"""The whole loop on τ²-bench telecom through `dvc exp run`, with scripted participants, in a temporary copy of the
repository: held-out tasks are τ²-bench's test split, training tasks are selected from the tasks disjoint from it,
and the gate promotes the oracle over the flawed agent; the same command again runs nothing."""

import json
import re
import shlex
import time

import pytest

from pipeline.domains.telecom.tasks import scenario
from tests.loop.loop_helpers import ROOT, copy_repo, dvc
from tests.loop.test_dvc_airline import AIRLINE_STAGES
from tests.needs import need_tau2

TELECOM_STAGES = AIRLINE_STAGES  # the same stages in the same order; the embedded (retail) model's are left out


def telecom_overrides(world: str) -> list[str]:
    """The `dvc exp run` overrides of the telecom loop in docs/domains.md: held-out and training tasks both in
    τ²-bench's telecom directory (`world`), split by task; episode limits that fit telecom's longest episodes."""
    sets = {
        "world.domain": "telecom",
        "world.eval_world": world,
        "world.train_world": world,
        "world.train_world_per_iteration": "false",
        "world.eval_tasks": "40",
        "baseline.source": '"agent:flawed:plan_adherence=0.4,invention=0.4,misread=0.4"',
        "train.method": "agent:oracle",
        "measure.trials": "2",
        "measure.executor": "serial",
        "measure.resamples": "200",
        "target.budget": "16",
        "synthesize.anchors": "20",
        "synthesize.config.verify.limits.max_turns": "60",
        "curate.probes": "2",
        "curate.executor": "serial",
        "gate.k": "2",
        "gate.resamples": "500",
        "gate.limits.max_turns": "60",
    }
    return [arg for key, value in sets.items() for arg in ("-S", f"{key}={value}")]


def test_the_docs_show_this_command():
    """docs/domains.md's command is the one the slow test runs (with the data directory the resolver finds)."""
    section = (ROOT / "docs" / "domains.md").read_text().split("## The loop on telecom", 1)[1]
    command = re.search(r"```bash\n(.*?)```", section, flags=re.S).group(1).replace("\\\n", " ")
    assert command.startswith("TELECOM=$(python -m pipeline.tau2.data telecom)\n")
    args = shlex.split(command.split("\n", 1)[1])
    assert args[:4] == ["dvc", "exp", "run", "--single-item"]
    stages = tuple(a for a in args[4:] if "=" not in a and a != "-S")
    assert stages == TELECOM_STAGES
    overrides = [a for a in args[4:] if a not in stages]
    assert overrides == telecom_overrides("$TELECOM")


@pytest.mark.slow
def test_exp_run_runs_the_telecom_loop(tmp_path):
    world = need_tau2("telecom")
    repo = copy_repo(tmp_path)
    start = time.monotonic()
    run = dvc(repo, "exp", "run", "--single-item", *telecom_overrides(str(world)), *TELECOM_STAGES, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for stage in TELECOM_STAGES:
        assert f"Running stage '{stage}'" in run.stdout, stage
    assert "Running stage 'embedded" not in run.stdout
    held = [json.loads(line) for line in (repo / "data" / "eval" / "tasks.jsonl").read_text().splitlines()]
    test_ids = set(json.loads((world / "split_tasks.json").read_text())["test"])
    assert len(held) == 40 and {t["id"] for t in held} == test_ids
    recorded = {json.loads(line)["domain"] for line in (repo / "runs/baseline/trajectories.jsonl").open()}
    assert recorded == {"telecom"}
    targets = json.loads((repo / "data" / "targets.json").read_text())
    assert targets["cells"], "the baseline's failures name telecom cells (issue/fault)"
    synth = json.loads((repo / "data" / "synth" / "manifest.json").read_text())
    assert synth["selection"] and synth["tasks"] >= 16 and synth["flaw_check"]
    assert synth["counts"]["by_aim"].get("measured", 0) > 0
    chosen = [json.loads(line) for line in (repo / "data/synth/tasks.jsonl").open()]
    assert not {scenario(t["id"]) for t in chosen} & {scenario(i) for i in test_ids}  # disjoint from held-out
    gate = json.loads((repo / "gate" / "gate.json").read_text())
    assert gate["promote"] is True and gate["pass_hat_k"]["candidate"] > gate["pass_hat_k"]["champion"]
    promotion = json.loads((repo / "gate" / "promotion.json").read_text())
    assert promotion["promoted"] is True and promotion["candidate"] == "oracle"
    assert (repo / "report" / "report.html").stat().st_size > 10_000
    assert time.monotonic() - start < 900
    again = dvc(repo, "exp", "run", "--single-item", *telecom_overrides(str(world)), *TELECOM_STAGES)
    assert "Running stage" not in again.stdout
