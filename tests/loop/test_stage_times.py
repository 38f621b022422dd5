"""Per-stage time records: written by `run_stage` (also on failure), and which belong to the current repro."""

from __future__ import annotations

import pytest

from pipeline.loop.entry import run_stage
from pipeline.loop.stage_times import StageTime, read_stage_time, write_stage_time
from pipeline.loop.track_inputs import StageTimes, about


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    (tmp_path / "params.yaml").write_text("loop:\n  iteration: 1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTLOOP_PARAMS", str(tmp_path / "params.yaml"))
    return tmp_path


def test_run_stage_records_start_end_and_status(in_tmp):
    assert run_stage("target", lambda p: p.loop.iteration) == 1
    rec = read_stage_time("target")
    assert rec.status == "FINISHED" and 0 <= rec.duration_s < 5
    assert (in_tmp / "runs" / "stage_times" / "target.json").exists()

    def boom(p):
        raise RuntimeError("stage failed")

    with pytest.raises(RuntimeError, match="stage failed"):
        run_stage("gate", boom)
    assert read_stage_time("gate").status == "FAILED"


def test_unreadable_or_missing_record_is_none(tmp_path):
    assert read_stage_time("measure", tmp_path) is None
    (tmp_path / "measure.json").write_text('{"stage": "measure", "start": "soon"}')
    assert read_stage_time("measure", tmp_path) is None


def test_stages_of_this_repro_are_the_chain_ending_now(tmp_path):
    now = 1_000_000.0
    for name, start, end in [
        ("eval_tasks", now - 90_000, now - 89_990),  # a day ago: skipped by DVC since
        ("measure", now - 600, now - 400),
        ("target", now - 399, now - 398),
        ("gate", now - 390, now - 10),
    ]:
        write_stage_time(StageTime(stage=name, start=start, end=end), tmp_path)
    st = StageTimes.read(["eval_tasks", "measure", "target", "gate", "report"], until=now, root=tmp_path)
    assert st.this_repro == {"measure", "target", "gate"}
    assert st.reused("eval_tasks") and not st.reused("measure") and not st.reused("report")
    assert st.start() == now - 600 and st.times("report") is None
    assert st.times("gate") == (now - 390, now - 10)


def test_about_reads_the_stage_scripts_docstring(tmp_path):
    (tmp_path / "measure.py").write_text('"""DVC stage `measure`: the baseline, k trials each."""\n')
    assert about("measure", tmp_path) == "the baseline, k trials each."
    assert about("missing", tmp_path) is None
