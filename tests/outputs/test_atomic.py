"""A full disk while writing: a file output is replaced whole or left as it was, a journal stops the run in one
line (and resumes), and no temporary file is left behind. The disk is made full by patching `os.fsync` to raise
ENOSPC (where a real full disk reports a write that did not fit), or by writing to /dev/full."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.outputs import WriteError, atomic_file, atomic_write, staged_folder, writing
from tests.outputs.test_outputs import run_dir, tasks_file  # noqa: F401  (module fixtures reused)
from tests.test_cli_bad_inputs import WORLD, clear_error

runner = CliRunner()


@pytest.fixture
def full_disk(monkeypatch):
    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", no_space)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if ".tmp" in p.name or ".partial-" in p.name)


# ---- the writer -------------------------------------------------------------------------------------------------


def test_the_atomic_writer_writes_the_same_bytes_as_a_plain_write(tmp_path):
    text = '{"a": "é — ✓"}\r\n' + "x\n" * 10_000
    atomic_write(tmp_path / "a.json", text)
    (tmp_path / "b.json").write_bytes(text.encode("utf-8"))
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    atomic_write(tmp_path / "c.png", b"\x89PNG\x00")
    assert (tmp_path / "c.png").read_bytes() == b"\x89PNG\x00"
    assert leftovers(tmp_path) == []


def test_a_full_disk_leaves_the_previous_file_and_no_temporary_file(tmp_path, full_disk):
    path = tmp_path / "gate.json"
    path.write_text('{"outcome": "promote"}\n')
    with pytest.raises(WriteError, match=r"gate\.json could not be written: No space left on device"):
        atomic_write(path, '{"outcome": "block"}\n' * 1000)
    assert path.read_text() == '{"outcome": "promote"}\n'
    assert leftovers(tmp_path) == []
    with pytest.raises(WriteError, match="No space left on device"):
        atomic_write(tmp_path / "new.json", "{}\n")
    assert not (tmp_path / "new.json").exists() and leftovers(tmp_path) == []


def test_an_error_inside_a_streamed_write_removes_the_temporary_file(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text("old\n")
    with pytest.raises(KeyError), atomic_file(path) as fh:
        fh.write("half\n")
        raise KeyError("a bug in the writer")
    assert path.read_text() == "old\n" and leftovers(tmp_path) == []


def test_dev_full_is_a_typed_error(tmp_path):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    match = "/dev/full could not be written: No space left on device"
    with pytest.raises(WriteError, match=match), writing("/dev/full", "kept"), open("/dev/full", "w") as f:
        f.write("x" * 100_000)


def test_a_staged_folder_on_a_full_disk_is_a_typed_error_and_leaves_the_old_folder(tmp_path, full_disk):
    out = tmp_path / "model"
    out.mkdir()
    (out / "weights").write_text("old")
    with pytest.raises(WriteError, match="model could not be written: No space"), staged_folder(out) as staging:
        (staging / "weights").write_text("new")
    assert (out / "weights").read_text() == "old" and leftovers(tmp_path) == []


def test_a_temporary_file_a_killed_writer_left_is_swept(tmp_path):
    dead = tmp_path / ".out.json.tmp-999999999-0"  # no such process
    dead.write_text("half")
    atomic_write(tmp_path / "out.json", "{}\n")
    assert not dead.exists() and (tmp_path / "out.json").read_text() == "{}\n"


# ---- measure ----------------------------------------------------------------------------------------------------


def _measure(tasks, out):
    args = ["measure", "--world", WORLD, "--tasks", str(tasks), "--trials", "1", "--out", str(out)]
    return runner.invoke(app, args)


def test_measure_on_a_full_disk_stops_in_one_line_and_resumes(tasks_file, run_dir, tmp_path, monkeypatch):  # noqa: F811
    out = tmp_path / "run"

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as m:
        m.setattr(os, "fsync", no_space)
        result = _measure(tasks_file, out)
    clear_error(result, "journal.jsonl could not be written: No space left on device", "run again to resume")
    assert len(result.output.strip().splitlines()) == 1
    assert leftovers(out) == [] and not (out / "trajectories.jsonl").exists() and not (out / "metrics.json").exists()
    result = _measure(tasks_file, out)  # space again: the journal is read back and the run finishes
    assert result.exit_code == 0, result.output
    for name in ("trajectories.jsonl", "verdicts.jsonl", "metrics.json", "per_task.csv"):
        assert (out / name).read_bytes() == (run_dir / name).read_bytes(), name


def test_measure_over_a_finished_run_on_a_full_disk_keeps_its_files(tasks_file, run_dir, tmp_path, full_disk):  # noqa: F811
    out = tmp_path / "run"
    shutil.copytree(run_dir, out)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    result = _measure(tasks_file, out)
    clear_error(result, "trajectories.jsonl could not be written: No space left on device")
    assert len(result.output.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert leftovers(out) == []


def test_cutting_a_torn_journal_on_a_full_disk_is_a_typed_error(tasks_file, tmp_path, full_disk):  # noqa: F811
    from pipeline.dataset import read_tasks
    from pipeline.trials import TrialJournal

    path = tmp_path / "journal.jsonl"
    path.write_bytes(b'{"journal": 1, "fingerprint": "f"}\n{"task_id": "x", "tri')
    with pytest.raises(WriteError, match="journal.jsonl could not be written: No space left on device"):
        TrialJournal(path, "f").load(read_tasks(tasks_file))
