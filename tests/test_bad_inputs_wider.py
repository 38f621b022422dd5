"""A wider round of bad inputs: outputs onto devices and onto a world's own files, folders where files are
expected, runs gated or reported against another domain or world, task ids nobody can read, params naming
nothing, synthesis in the world the targets were measured in, sizes no run can reach, and a telecom write the
policy forbids. Each ends in a one-line error (exit 2) or a refusal that changes nothing."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

import click
import pytest
import yaml
from typer.testing import CliRunner

from pipeline.authoring.templates import generate_tasks
from pipeline.cli import app
from pipeline.dataset.io import write_tasks
from pipeline.loop.params import ParamsError, load_params
from pipeline.loop.resolve import resolve_params
from pipeline.world.registry import load_world

WORLD = "gen-3-4x10x20"
ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def clear_error(result, *needles: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    output = click.unstyle(result.output)  # rich colours usage errors under GITHUB_ACTIONS (act, runners)
    assert "Traceback" not in output
    text = " ".join(output.split())
    for needle in needles:
        assert needle in text, (needle, text)
    return text


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """Tasks of WORLD and an oracle run on them."""
    root = tmp_path_factory.mktemp("measured")
    write_tasks(root / "tasks.jsonl", generate_tasks(load_world(WORLD), 2, seed=1))
    args = ["measure", "--world", WORLD, "--tasks", str(root / "tasks.jsonl"), "--agent", "oracle"]
    done = runner.invoke(app, [*args, "--trials", "1", "--executor", "serial", "--out", str(root / "run")])
    assert done.exit_code == 0, done.output
    return root


def test_out_onto_a_pipe_or_device_is_refused_and_the_node_kept(tmp_path):
    # the staged write renames a temporary file over --out: a device (/dev/full) or a pipe would be replaced
    os.mkfifo(fifo := tmp_path / "pipe")
    args = ["tasks", "generate", "--world", WORLD, "--n", "1", "--out", str(fifo)]
    clear_error(runner.invoke(app, args), str(fifo), "not a regular file")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_world_explore_out_onto_the_worlds_db_json(tmp_path):
    world = tmp_path / "w"
    gen = ["world", "generate", "--out", str(world), "--users", "3", "--products", "3", "--orders", "3"]
    assert runner.invoke(app, gen).exit_code == 0
    before = (world / "db.json").read_bytes()
    args = ["world", "explore", "--world", str(world), "--customers", "1", "--out", str(world / "db.json")]
    clear_error(runner.invoke(app, args), "would overwrite a file of the --world input")
    assert (world / "db.json").read_bytes() == before


def test_a_folder_where_a_file_is_read_is_one_line(tmp_path):
    from pipeline.cli.errors import message

    (folder := tmp_path / "tasks.json").mkdir()
    try:
        folder.read_text()
    except IsADirectoryError as exc:
        assert message(exc) == f"{folder}: is a folder, not a file"


def test_gate_with_a_domain_other_than_the_runs(measured, tmp_path):
    args = ["gate", "--candidate", str(measured / "run"), "--tasks", str(measured / "tasks.jsonl"), "--world", WORLD]
    result = runner.invoke(app, [*args, "--k", "1", "--domain", "airline", "--out", str(tmp_path / "g.json")])
    clear_error(result, "measured with domain 'retail', given 'airline'")
    assert not (tmp_path / "g.json").exists()


def test_report_with_a_world_other_than_the_runs(measured, tmp_path):
    run, tasks = str(measured / "run"), str(measured / "tasks.jsonl")
    args = ["report", "--baseline", run, "--candidate", run, "--tasks", tasks, "--world", "gen-4-4x10x20"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "r.html")])
    clear_error(result, f"measured in world '{WORLD}', but --world is 'gen-4-4x10x20'")


@pytest.mark.parametrize(
    ("task_id", "needle"), [("", "cannot be empty"), ("  ", "cannot be empty"), ("a\u202eb\x00", "U+0000, U+202E")]
)
def test_task_ids_nobody_can_read(tmp_path, task_id, needle):
    line = json.loads(generate_tasks(load_world(WORLD), 1, seed=1)[0].model_dump_json())
    (path := tmp_path / "tasks.jsonl").write_text(json.dumps({**line, "id": task_id}) + "\n")
    clear_error(runner.invoke(app, ["tasks", "validate", str(path), "--world", WORLD]), "field id", needle)


def _params(tmp_path, patch: dict) -> Path:
    data = yaml.safe_load((ROOT / "params.yaml").read_text())
    for section, values in patch.items():
        data[section].update(values)
    (path := tmp_path / "params.yaml").write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        ({"measure": {"tasks": "data/no_such_tasks.jsonl"}}, "measure.tasks: data/no_such_tasks.jsonl does not exist"),
        ({"world": {"eval_tasks": 10**12}}, "world.eval_tasks: Input should be less than or equal to 100000"),
        ({"target": {"config": {"weights": {"invension": 1.0}}}}, "unknown failure mode(s) ['invension']"),
        ({"target": {"config": {"dials": {"invention": {"vage_item": 0.5}}}}}, "unknown dial(s) ['vage_item']"),
    ],
)
def test_params_naming_nothing_are_refused_at_load(tmp_path, monkeypatch, patch, needle):
    monkeypatch.chdir(tmp_path)
    path = _params(tmp_path, patch)
    with pytest.raises(ParamsError, match=None) as err:
        resolve_params(load_params(path), str(path))
    assert needle in str(err.value)


def test_params_measure_tasks_a_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "imported").mkdir()
    path = _params(tmp_path, {"measure": {"tasks": "imported"}})
    with pytest.raises(ParamsError, match="measure.tasks: imported is a folder"):
        resolve_params(load_params(path), str(path))


def test_synthesize_in_the_world_the_targets_were_measured_in(measured, tmp_path):
    targets = tmp_path / "targets.json"
    args = ["target", "--metrics", str(measured / "run" / "metrics.json"), "--budget", "3", "--out", str(targets)]
    assert runner.invoke(app, args).exit_code == 0
    result = runner.invoke(
        app, ["synthesize", "--world", WORLD, "--targets", str(targets), "--out", str(tmp_path / "s")]
    )
    clear_error(result, f"measured in world '{WORLD}'", "another generated world than the evaluation world")
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["world", "generate", "--out", "w", "--users", "1000000000"],
        ["world", "generate", "--out", "w", "--seed", "-5"],
        ["tasks", "generate", "--world", WORLD, "--n", "100000000", "--out", "t.jsonl"],
    ],
)
def test_sizes_no_run_can_reach(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "Invalid value" in result.output, result.output
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("amount", [math.nan, math.inf, 1e300, 2.5, -1.0])
def test_telecom_refuel_beyond_the_policy_changes_nothing(amount):
    from pipeline.tau2.data import Tau2DataNotFound, tau2_data_dir
    from pipeline.world.tools import execute

    try:
        world = load_world(str(tau2_data_dir("telecom")), "telecom")
    except Tau2DataNotFound:
        pytest.skip("τ²-bench telecom data not on this machine")
    customer = next(iter(world.table("customers").values()))
    session = world.session(authenticated_user_id=customer.customer_id)
    args = {"customer_id": customer.customer_id, "line_id": customer.line_ids[0], "gb_amount": amount}
    event = execute(session, "refuel_data", args)
    assert not event.ok and "at most 2 GB" in event.content
    assert not any(session.changed().values())
    ok = execute(session, "refuel_data", {**args, "gb_amount": 2.0})
    assert ok.ok


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--model-organization", " "], "model_organization"),
        (["--model-organization", "Lab", "--contact-email", "notanemail"], "email"),
    ],
)
def test_submission_with_a_blank_organization_or_an_address_that_is_not_one(measured, tmp_path, extra, needle):
    args = ["export", "tau2-submission", "--run", str(measured / "run"), "--out", str(tmp_path / "s.json")]
    clear_error(runner.invoke(app, [*args, "--submitting-organization", "Lab", *extra]), needle)
    assert not (tmp_path / "s.json").exists()
