"""Bad input on the command line is a one-line error and exit code 2, never a traceback."""

from __future__ import annotations

import json

import click
import pytest
from typer.testing import CliRunner

from pipeline.authoring.templates import generate_tasks
from pipeline.cli import app
from pipeline.dataset.io import write_tasks
from pipeline.world.registry import load_world

WORLD = "gen-1-10x40x80"
runner = CliRunner()


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("tasks") / "tasks.jsonl"
    write_tasks(path, generate_tasks(load_world(WORLD), 2, seed=1))
    return path


def clear_error(result, *needles: str) -> str:
    """The run failed as a usage error with a message naming each needle, and without a traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    output = click.unstyle(result.output)  # rich colours usage errors under GITHUB_ACTIONS (act, runners)
    assert "Traceback" not in output
    assert "error:" in output
    text = " ".join(output.split())
    for needle in needles:
        assert needle in text, (needle, text)
    return text


def measure(tasks, out, *extra: str):
    args = ["measure", "--world", WORLD, "--tasks", str(tasks), "--trials", "1", "--out", str(out), *extra]
    return runner.invoke(app, args)


@pytest.mark.parametrize(
    ("agent", "needle"),
    [
        ("hf:/nonexistent", "/nonexistent"),
        ("flawed:seed=inf", "finite"),
        ("flawed:seed=nan", "finite"),
        ("flawed:seed=1.5", "whole number"),
        ("hf:models/embedded,max_new_tokens=inf", "finite"),
        ("openai:m,temperature=nan", "finite"),
    ],
)
def test_bad_agent_specs(tasks_file, tmp_path, agent, needle):
    clear_error(measure(tasks_file, tmp_path / "run", "--agent", agent), agent, needle)


@pytest.mark.parametrize("ref", ["gen-1-0x0x0", "gen-1-0x5x5", "gen-1-5x0x5"])
def test_generated_world_with_empty_tables(tasks_file, tmp_path, ref):
    clear_error(measure(tasks_file, tmp_path / "run", "--world", ref), ref, "greater than or equal to 1")


def test_non_utf8_task_file(tasks_file, tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(tasks_file.read_bytes().splitlines(keepends=True)[0] + b'\xff\xfe{"id": "b"}\n')
    clear_error(runner.invoke(app, ["tasks", "validate", str(path)]), f"{path}:2", "UTF-8")


def test_deeply_nested_task_file(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    clear_error(runner.invoke(app, ["tasks", "validate", str(path)]), f"{path}:1", "nested too deeply")


@pytest.mark.parametrize(
    "header",
    [b"not json at all", b"[1, 2, 3]", b'"a string"', b"\xff\xfe", b"[" * 50_000, b'{"fingerprint": 3}'],
    ids=["text", "array", "string", "not-utf8", "deep", "no-journal-key"],
)
def test_journal_with_a_corrupt_header(tasks_file, tmp_path, header):
    out = tmp_path / "run"
    out.mkdir()
    (out / "journal.jsonl").write_bytes(header + b"\n")
    clear_error(measure(tasks_file, out), "journal.jsonl:1", "not a trial journal header")


def test_journal_lines_that_are_not_objects_are_skipped(tasks_file, tmp_path):
    out = tmp_path / "run"
    assert measure(tasks_file, out).exit_code == 0
    journal = out / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    kept = lines[:2]  # header + the first trial
    junk = [b"[1, 2]\n", b"42\n", b'"text"\n', b"null\n", b"\xff\xfe\n", b"[" * 50_000 + b"\n", b'{"trial": []}\n']
    journal.write_bytes(b"".join(kept + junk))
    (out / "metrics.json").unlink()
    result = measure(tasks_file, out)
    assert result.exit_code == 0, result.output
    assert json.loads((out / "metrics.json").read_text())["valid_trials"] == 2  # the lost trial was run again


@pytest.mark.parametrize("path", ["DIR", "/dev/zero"])
def test_tasks_validate_on_a_folder_or_a_device(tmp_path, path):
    target = str(tmp_path) if path == "DIR" else path
    clear_error(runner.invoke(app, ["tasks", "validate", target]), target, "not a regular file")


def test_bad_option_values_name_the_option(tasks_file, tmp_path):
    args = ["rollout", "--world", WORLD, "--tasks", str(tasks_file), "--agent", "flawed", "--out", str(tmp_path / "r")]
    result = runner.invoke(app, [*args, "--flaw-rate", "7"])  # click's usage error: exit 2, the option named
    assert (
        result.exit_code == 2 and "Traceback" not in result.output and "'--flaw-rate'" in click.unstyle(result.output)
    )
    assert not (tmp_path / "r").exists()
    run = tmp_path / "run"
    report = ["report", "--baseline", str(run), "--candidate", str(run), "--tasks", str(tasks_file), "--world", WORLD]
    clear_error(runner.invoke(app, [*report, "--verdict", "x", "--out", str(tmp_path / "r.html")]), "--verdict 'x'")
    serve = ["serve", "--model", str(tmp_path), "--api-key", ""]
    clear_error(runner.invoke(app, serve), "--api-key", "is empty")


@pytest.mark.parametrize(
    ("setting", "needle"),
    [("dtype=int4", "dtype 'int4': expected one of"), ("device=cuda", "device 'cuda'"), ("device=tpu", "expected cpu")],
)
def test_hf_placement_this_machine_cannot_give(tasks_file, tmp_path, setting, needle):
    import torch

    if setting == "device=cuda" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    clear_error(measure(tasks_file, tmp_path / "run", "--agent", f"hf:models/embedded,{setting}"), needle)


def test_target_metrics_that_are_a_json_list(tmp_path):
    metrics = tmp_path / "metrics.json"
    metrics.write_text("[1, 2]\n")
    args = ["target", "--metrics", str(metrics), "--budget", "5", "--out", str(tmp_path / "targets.json")]
    clear_error(runner.invoke(app, args), str(metrics), "expected a JSON object, got a list")


def test_world_generate_more_products_than_the_catalog_names(tmp_path):
    args = ["world", "generate", "--products", "100000", "--out", str(tmp_path / "w")]
    clear_error(runner.invoke(app, args), "n_products=100000", "distinct product names")


def test_report_gate_that_is_a_binary_file(tasks_file, tmp_path):
    run = tmp_path / "run"
    assert measure(tasks_file, run).exit_code == 0
    gate = tmp_path / "gate.json"
    gate.write_bytes(bytes(range(128, 256)))
    args = ["report", "--baseline", str(run), "--candidate", str(run), "--tasks", str(tasks_file), "--world", WORLD]
    args += ["--gate", str(gate), "--out", str(tmp_path / "r.html")]
    clear_error(runner.invoke(app, args), str(gate), "not UTF-8 text")


@pytest.mark.parametrize("files", [{}, {"config.json": "{}"}], ids=["empty", "config-only"])
def test_measure_hf_agent_on_a_folder_without_a_model(tasks_file, tmp_path, files):
    folder = tmp_path / "nomodel"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    clear_error(measure(tasks_file, tmp_path / "run", "--agent", f"hf:{folder}"), f"hf:{folder}", str(folder))


def test_ray_client_address_without_rays_client(tasks_file, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "grpc", None)  # as without the `ray[client]` extra: importing grpc fails
    address = "ray://127.0.0.1:10001"
    result = measure(tasks_file, tmp_path / "run", "--executor", "ray", "--ray-address", address)
    clear_error(result, f"Ray address '{address}'", "ray[client]")


BINARY = b"\x00\xff\xfe\x80garbage"


def test_world_that_is_a_binary_json_file(tasks_file, tmp_path):
    world = tmp_path / "db.json"
    world.write_bytes(BINARY)
    clear_error(measure(tasks_file, tmp_path / "run", "--world", str(world)), str(world), "not UTF-8 text")


def test_gate_aa_config_that_is_a_binary_file(tasks_file, tmp_path):
    config = tmp_path / "gate.yaml"
    config.write_bytes(BINARY)
    args = ["gate-aa", str(tmp_path), str(tmp_path), "--tasks", str(tasks_file), "--world", WORLD]
    result = runner.invoke(app, [*args, "--config", str(config), "--out", str(tmp_path / "aa.json")])
    clear_error(result, str(config), "not JSON or YAML")


def test_tau2_results_that_are_a_binary_file(tmp_path):
    results = tmp_path / "results.json"
    results.write_bytes(BINARY)
    args = ["import", "tau2-run", str(results), "--domain", "airline", "--out", str(tmp_path / "run")]
    clear_error(runner.invoke(app, args), str(results), "not UTF-8 text")
    assert not (tmp_path / "run").exists()


def test_refused_measure_leaves_no_run_folder(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("")
    clear_error(measure(tasks, tmp_path / "run"), str(tasks), "empty task set")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("raw", [BINARY, b"k: [2\n"], ids=["binary", "bad-yaml"])
def test_train_baseline_config_that_is_not_yaml(tmp_path, raw):
    config = tmp_path / "embedded.yaml"
    config.write_bytes(raw)
    args = ["train", "baseline", "--config", str(config), "--out", str(tmp_path / "ckpt")]
    clear_error(runner.invoke(app, args), str(config), "not JSON or YAML")
    assert not (tmp_path / "ckpt").exists()
