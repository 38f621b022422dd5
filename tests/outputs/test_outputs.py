"""Outputs are safe: never an input, checked before any work, a folder written whole, a run folder locked."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.authoring.templates import generate_tasks
from pipeline.cli import app
from pipeline.dataset.io import write_tasks
from pipeline.outputs import FolderBusyError, OutputError, check_output, folder_lock, staged_folder
from pipeline.world.registry import load_world
from tests.test_cli_bad_inputs import WORLD, clear_error

runner = CliRunner()


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("tasks") / "tasks.jsonl"
    write_tasks(path, generate_tasks(load_world(WORLD), 2, seed=1))
    return path


@pytest.fixture(scope="module")
def run_dir(tasks_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "oracle"
    args = ["measure", "--world", WORLD, "--tasks", str(tasks_file), "--trials", "1", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


# ---- the check --------------------------------------------------------------------------------------------------
def test_an_output_that_is_an_input_is_refused(tmp_path):
    src = tmp_path / "tasks.jsonl"
    src.write_text("x\n")
    with pytest.raises(OutputError, match=r"--out .*tasks.jsonl is the --tasks input"):
        check_output(src, inputs={"--tasks": src})
    link = tmp_path / "link.jsonl"
    link.symlink_to(src)
    with pytest.raises(OutputError, match="is the --tasks input"):
        check_output(link, inputs={"--tasks": src})
    with pytest.raises(OutputError, match="is the --pool input"):
        check_output(tmp_path, folder=True, inputs={"--pool": [tmp_path / "missing", tmp_path]})
    with pytest.raises(OutputError, match="holds the --tasks input"):
        check_output(tmp_path, folder=True, inputs={"--tasks": src})
    assert src.read_text() == "x\n"
    check_output(tmp_path / "new.jsonl", inputs={"--tasks": src, "--world": "gen-3"})  # not an input: fine


def test_a_file_output_over_a_file_of_an_input_folder_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "trajectories.jsonl").write_text("t\n")
    with pytest.raises(OutputError, match="would overwrite a file of the --candidate input"):
        check_output(run / "trajectories.jsonl", inputs={"--candidate": run})
    check_output(run / "gate.json", inputs={"--candidate": run})  # a new file beside the run's files


def test_kind_and_writability_are_checked(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputError, match="is a folder; give a file path"):
        check_output(tmp_path)
    with pytest.raises(OutputError, match="is a file; give a folder"):
        check_output(tmp_path / "file", folder=True)
    with pytest.raises(OutputError, match="is a file, not a folder"):
        check_output(tmp_path / "file" / "out.json")
    with pytest.raises(OutputError, match="cannot be written"):
        check_output("/proc/agentloop-nowhere/out.json")  # not writable, even by root
    with pytest.raises(OutputError, match="cannot be written"):
        check_output("/proc/version")
    (tmp_path / "synth").mkdir()
    (tmp_path / "synth" / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match=r"already holds files this command does not write \(notes.txt\)"):
        check_output(tmp_path / "synth", folder=True, owned=("tasks.jsonl", "manifest.json"))
    assert not list(tmp_path.glob(".agentloop-probe-*"))  # the writability probe leaves nothing


# ---- whole or not at all ----------------------------------------------------------------------------------------
def test_a_staged_folder_replaces_the_old_one_only_when_finished(tmp_path):
    out = tmp_path / "synth"
    with staged_folder(out) as d:
        (d / "tasks.jsonl").write_text("old\n")
        (d / "manifest.json").write_text("{}")
    with pytest.raises(RuntimeError), staged_folder(out) as d:
        (d / "tasks.jsonl").write_text("new\n")
        raise RuntimeError("killed while writing")
    assert (out / "tasks.jsonl").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["synth"]
    with staged_folder(out) as d:
        (d / "tasks.jsonl").write_text("new\n")
    assert sorted(p.name for p in out.iterdir()) == ["tasks.jsonl"]  # the old manifest is gone with the old folder


def _write_and_die(out: str) -> None:
    with staged_folder(Path(out)) as d:
        (d / "tasks.jsonl").write_text("half")
        os._exit(9)  # as kill -9: no clean-up runs


def test_a_killed_writer_leaves_the_old_folder_and_the_next_run_sweeps_its_leftover(tmp_path):
    out = tmp_path / "synth"
    with staged_folder(out) as d:
        (d / "manifest.json").write_text("{}")
    proc = multiprocessing.get_context("fork").Process(target=_write_and_die, args=(str(out),))
    proc.start()
    proc.join()
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"]
    assert [p.name for p in tmp_path.glob(".synth.partial-*")] == [f".synth.partial-{proc.pid}"]
    with staged_folder(out) as d:
        (d / "manifest.json").write_text("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["synth"]


# ---- the lock ---------------------------------------------------------------------------------------------------
def _hold(folder: str, ready, release) -> None:
    with folder_lock(Path(folder)):
        ready.set()
        release.wait(30)


def test_a_locked_folder_refuses_a_second_writer_and_frees_when_the_holder_dies(tmp_path):
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(tmp_path / "run"), ready, release))
    holder.start()
    assert ready.wait(30)
    with pytest.raises(FolderBusyError, match="being written by another run"), folder_lock(tmp_path / "run"):
        pass
    holder.kill()
    holder.join()
    with folder_lock(tmp_path / "run"):  # the kernel dropped the dead holder's lock
        pass
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == []  # no lock file among the outputs


# ---- every command checks before it works -----------------------------------------------------------------------
def test_rollout_onto_its_tasks_file_is_refused_and_the_file_kept(tasks_file):
    before = tasks_file.read_bytes()
    result = runner.invoke(app, ["rollout", "--world", WORLD, "--tasks", str(tasks_file), "--out", str(tasks_file)])
    clear_error(result, "--out", "is the --tasks input")
    assert tasks_file.read_bytes() == before


def test_gate_onto_a_trajectories_file_is_refused(run_dir, tasks_file):
    before = (run_dir / "trajectories.jsonl").read_bytes()
    args = ["gate", "--candidate", str(run_dir), "--tasks", str(tasks_file), "--world", WORLD]
    clear_error(runner.invoke(app, [*args, "--out", str(run_dir / "trajectories.jsonl")]), "--candidate input")
    assert (run_dir / "trajectories.jsonl").read_bytes() == before


def test_curate_onto_its_pool_folder_and_measure_onto_a_foreign_folder_are_refused(run_dir, tasks_file, tmp_path):
    args = ["curate", "--pool", str(run_dir), "--tasks", str(tasks_file), "--world", WORLD, "--agent", "oracle"]
    clear_error(runner.invoke(app, [*args, "--out", str(run_dir)]), "is the --pool input")
    (tmp_path / "notes.txt").write_text("mine")
    measure = ["measure", "--world", WORLD, "--tasks", str(tasks_file), "--trials", "1", "--out", str(tmp_path)]
    clear_error(runner.invoke(app, measure), "does not write (notes.txt)")


def test_train_sft_onto_its_base_checkpoint_is_refused_before_training(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    (base / "agentloop.json").write_text("{}")
    data = tmp_path / "trajectories.jsonl"
    data.write_text("")
    result = runner.invoke(app, ["train", "sft", "--base", str(base), "--data", str(data), "--out", str(base)])
    clear_error(result, "--out", "is the --base input")
    assert json.loads((base / "agentloop.json").read_text()) == {}


def test_two_measures_into_one_folder_at_once(tasks_file, tmp_path):
    out = tmp_path / "run"
    with folder_lock(out, "measure"):  # another measure holds the folder
        t0 = time.monotonic()
        args = ["measure", "--world", WORLD, "--tasks", str(tasks_file), "--trials", "1", "--out", str(out)]
        clear_error(runner.invoke(app, args), "being written by another measure")
        assert time.monotonic() - t0 < 60
    assert not (out / "journal.jsonl").exists()


def test_folder_lock_removes_the_folder_it_made_when_the_block_fails(tmp_path):
    made, kept = tmp_path / "made", tmp_path / "kept"
    kept.mkdir()
    for folder in (made, kept):
        with pytest.raises(ValueError), folder_lock(folder):
            raise ValueError("refused")
    assert not made.exists() and kept.is_dir()
    with folder_lock(made):
        pass
    assert made.is_dir()  # a run that succeeds keeps its folder, empty or not
