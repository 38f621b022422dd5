"""Every consumer of a run, a target file or a synthesized set checks where it came from through the one shared
check (`pipeline.dataset.provenance`): `target` its run, `synthesize` its targets, `curate` its pool, `rollout` and
`train grpo` their task files. Inputs that do not belong together are refused in one line naming the field and both
values, before any output is written."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.dataset.provenance import PROVENANCE_FILE, file_sha256
from pipeline.target import Targets
from pipeline.world.registry import load_world

RETAIL = "gen-5-8x10x20"
AIRLINE = "gen-1-10x10x10"
SYNTH = "gen-7"
runner = CliRunner()


def ok(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def refused(*args: str, says: str) -> str:
    """The command exits 2 with a one-line error holding `says`, and no traceback."""
    result = runner.invoke(app, list(args))
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    text = " ".join(result.output.split())
    assert says in text, text
    return text


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A retail run and its targets and synthesized set; an airline run and its targets."""
    root = tmp_path_factory.mktemp("consumers")
    for name, world, domain in (("retail", RETAIL, "retail"), ("airline", AIRLINE, "airline")):
        tasks, run = root / f"{name}_tasks.jsonl", root / f"{name}_run"
        ok("tasks", "generate", "--world", world, "--domain", domain, "--n", "6", "--out", str(tasks))
        ok("measure", "--world", world, "--domain", domain, "--tasks", str(tasks), "--agent", "flawed",
           "--trials", "2", "--out", str(run))  # fmt: skip
        ok("target", "--metrics", str(run / "metrics.json"), "--budget", "9", "--verdicts",
           str(run / "verdicts.jsonl"), "--tasks", str(tasks), "--out", str(root / f"{name}_targets.json"))  # fmt: skip
    ok("synthesize", "--world", SYNTH, "--targets", str(root / "retail_targets.json"), "--generations", "1",
       "--out", str(root / "synth"))  # fmt: skip
    return root


def target_args(made, name: str, out) -> list[str]:
    run = made / f"{name}_run"
    return ["target", "--metrics", str(run / "metrics.json"), "--budget", "9", "--verdicts",
            str(run / "verdicts.jsonl"), "--tasks", str(made / f"{name}_tasks.jsonl"), "--out", str(out)]  # fmt: skip


# ---- target ---------------------------------------------------------------------------------------------------------
def test_target_refuses_a_domain_its_run_was_not_measured_in(made, tmp_path):
    out = tmp_path / "targets.json"
    refused(
        *target_args(made, "retail", out), "--domain", "airline", says="measured with domain 'retail', given 'airline'"
    )
    assert not out.exists()


def test_target_without_a_record_checks_the_domain_the_trajectories_name(made, tmp_path):
    shutil.copytree(made / "retail_run", run := tmp_path / "run")
    (run / PROVENANCE_FILE).unlink()
    args = ["target", "--metrics", str(run / "metrics.json"), "--budget", "9", "--verdicts",
            str(run / "verdicts.jsonl"), "--tasks", str(made / "retail_tasks.jsonl"), "--domain", "airline",
            "--out", str(tmp_path / "t.json")]  # fmt: skip
    refused(*args, says="measured with domain 'retail', given 'airline'")


def test_target_refuses_metrics_and_verdicts_of_two_runs(made, tmp_path):
    args = target_args(made, "retail", tmp_path / "t.json")
    args[args.index("--metrics") + 1] = str(made / "airline_run" / "metrics.json")
    refused(*args, says="tasks_sha256")


def test_targets_carry_their_runs_record(made):
    record = json.loads((made / "retail_run" / PROVENANCE_FILE).read_text())
    targets = Targets.read(made / "retail_targets.json")
    run = made / "retail_run"
    sources = {"metrics": file_sha256(run / "metrics.json"), "verdicts": file_sha256(run / "verdicts.jsonl")}
    assert targets.provenance.model_dump(exclude_none=True) == {**record, "sources": sources}
    # targets made without a run record are written as before: no `provenance` key at all
    assert "provenance" not in json.loads(targets.model_copy(update={"provenance": None}).text())


# ---- synthesize -----------------------------------------------------------------------------------------------------
def test_synthesize_refuses_targets_of_another_domain(made, tmp_path):
    out = tmp_path / "synth"
    args = ["synthesize", "--world", SYNTH, "--targets", str(made / "airline_targets.json"), "--out", str(out)]
    refused(*args, says="measured with domain 'airline', given 'retail'")
    assert not out.exists()


def test_synthesize_refuses_cells_of_another_domain_in_targets_without_a_record(made, tmp_path):
    data = json.loads((made / "airline_targets.json").read_text())
    assert data.pop("provenance") and data["cells"]
    (bare := tmp_path / "targets.json").write_text(json.dumps(data))
    args = ["synthesize", "--world", SYNTH, "--targets", str(bare), "--out", str(tmp_path / "synth")]
    refused(*args, says="field cells:")
    assert not (tmp_path / "synth").exists()


def test_synthesize_records_what_it_made(made):
    synth, world = made / "synth", load_world(SYNTH)
    assert json.loads((synth / PROVENANCE_FILE).read_text()) == {
        "domain": "retail",
        "world": world.name,
        "world_digest": world.fingerprint,
        "tasks_sha256": file_sha256(synth / "tasks.jsonl"),
        "trajectories_sha256": file_sha256(synth / "trajectories.jsonl"),
        "made_by": "synthesize",
        "sources": {"targets": file_sha256(made / "retail_targets.json")},
    }


# ---- curate ---------------------------------------------------------------------------------------------------------
def curate_args(pool, tasks, world: str, out, *extra: str) -> list[str]:
    return ["curate", "--pool", str(pool), "--tasks", str(tasks), "--world", world, "--agent", "oracle", "--probes",
            "1", "--out", str(out), *extra]  # fmt: skip


def test_curate_refuses_a_pool_of_another_domain(made, tmp_path):
    synth, out = made / "synth", tmp_path / "cur"
    args = curate_args(synth, synth / "tasks.jsonl", SYNTH, out, "--domain", "airline")
    refused(*args, says="made by synthesize with domain 'retail', given 'airline'")
    assert not out.exists()


def test_curate_without_a_record_refuses_a_pool_of_another_domain(made, tmp_path):
    """It used to crash (KeyError: unknown table 'orders') replaying retail trajectories in an airline world."""
    shutil.copytree(made / "synth", synth := tmp_path / "synth")
    (synth / PROVENANCE_FILE).unlink()
    args = curate_args(synth, synth / "tasks.jsonl", SYNTH, tmp_path / "cur", "--domain", "airline")
    refused(*args, says="trajectory domain 'retail', curating in 'airline'")


def test_curate_refuses_a_pool_of_another_world(made, tmp_path):
    synth = made / "synth"
    args = curate_args(synth / "trajectories.jsonl", synth / "tasks.jsonl", "gen-8", tmp_path / "cur")
    refused(*args, says="made by synthesize with world 'gen-7', given 'gen-8'")


def _other_tables(made, tmp_path):
    """The synthesized set, its record saying it was made in a world of the same name with other tables."""
    shutil.copytree(made / "synth", synth := tmp_path / "synth")
    record = json.loads((synth / PROVENANCE_FILE).read_text())
    (synth / PROVENANCE_FILE).write_text(json.dumps({**record, "world_digest": "0" * 64}))
    return synth


def test_curate_refuses_a_pool_made_in_other_tables_of_the_same_name(made, tmp_path):
    synth = _other_tables(made, tmp_path)
    args = curate_args(synth, synth / "tasks.jsonl", SYNTH, tmp_path / "cur")
    refused(*args, says="with world_digest '0000000000000000', given")


# ---- rollout and train grpo -----------------------------------------------------------------------------------------
def test_rollout_refuses_tasks_made_in_other_tables(made, tmp_path):
    synth = _other_tables(made, tmp_path)
    out = tmp_path / "r.jsonl"
    refused("rollout", "--world", SYNTH, "--tasks", str(synth / "tasks.jsonl"), "--out", str(out), says="world_digest")
    assert not out.exists()
    ok("rollout", "--world", SYNTH, "--tasks", str(made / "synth" / "tasks.jsonl"), "--out", str(out))


@pytest.mark.slow  # imports TRL (20 s)
def test_train_grpo_refuses_tasks_made_in_other_tables_before_loading_a_model(made, tmp_path):
    synth = _other_tables(made, tmp_path)
    (base := tmp_path / "base").mkdir()  # not a checkpoint: the task file is checked first
    args = ["train", "grpo", "--base", str(base), "--tasks", str(synth / "tasks.jsonl"), "--out", str(tmp_path / "m")]
    refused(*args, says="made by synthesize with world_digest '0000000000000000'")
    assert not (tmp_path / "m").exists()
