"""Failure cells: each mode's failed trials spread over their tasks' coverage cells, read from verdict rows."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pipeline.authoring.templates import generate_tasks
from pipeline.cli import app
from pipeline.dataset.io import write_tasks
from pipeline.errors import InputError
from pipeline.grading.modes import LOOP_MODES
from pipeline.target import Targets, VerdictsReadError, failure_cells, make_targets
from tests.agents.scripted_helpers import small_world
from tests.target.test_split import _metrics


def _row(task_id: str, passed: bool, modes: list[str] | None = None) -> dict:
    analysis = None if modes is None else {"modes": modes, "dominant": modes[0] if modes else None}
    return {"analysis": analysis, "verdict": {"task_id": task_id, "trial": 0, "passed": passed}}


def _files(tmp_path, rows):
    cancel, refused = generate_tasks(small_world(), 2, seed=1, templates=["cancel", "cancel_wrong_status"])
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, [cancel, refused])
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text("".join(json.dumps(r(cancel.id, refused.id)) + "\n" for r in rows))
    return verdicts, tasks, cancel, refused


def test_failed_trials_weigh_their_tasks_cells_per_named_mode(tmp_path):
    verdicts, tasks, cancel, refused = _files(
        tmp_path,
        [
            lambda c, r: _row(c, False, ["invention"]),
            lambda c, r: _row(c, False, ["invention", "plan_adherence"]),
            lambda c, r: _row(c, True),  # passes count nowhere
            lambda c, r: _row(r, False, ["misread"]),
            lambda c, r: _row(r, False, []),  # no mode named: the modes its cells are tagged with (misread only)
        ],
    )
    assert [len(t.user_script.requests) for t in (cancel, refused)] == [1, 1]
    got = failure_cells(verdicts, tasks, "retail")
    assert got == {
        "invention": {"cancel/plain/done": 1.0},
        "plan_adherence": {"cancel/plain/done": 1.0},
        "misread": {"cancel_wrong_status/plain/refused": 1.0},
    }


def test_unnamed_failures_split_across_the_modes_their_cells_carry(tmp_path):
    verdicts, tasks, *_ = _files(tmp_path, [lambda c, r: _row(c, False, []), lambda c, r: _row(r, False, ["misread"])])
    got = failure_cells(verdicts, tasks, "retail", targeted=LOOP_MODES)
    # the cancel failure (no mode named) adds 1/3 to each of the three targeted modes a cancel exercises
    assert got["invention"] == got["plan_adherence"] == {"cancel/plain/done": 1.0}
    assert got["misread"] == {"cancel_wrong_status/plain/refused": 0.75, "cancel/plain/done": 0.25}
    assert "inaction" not in got  # a mode left out of the split moves no other mode's shares
    every = failure_cells(verdicts, tasks, "retail")  # every mode: a cancel also exercises inaction, 1/4 each
    assert every["inaction"] == {"cancel/plain/done": 1.0}
    assert every["misread"] == {"cancel_wrong_status/plain/refused": 0.8, "cancel/plain/done": 0.2}


def test_bad_rows_and_unknown_tasks_name_the_file_and_line(tmp_path):
    verdicts, tasks, *_ = _files(tmp_path, [lambda c, r: _row("nope", False, ["invention"])])
    with pytest.raises(VerdictsReadError, match=r"verdicts.jsonl:1: task 'nope' is not in .*tasks.jsonl"):
        failure_cells(verdicts, tasks, "retail")
    verdicts.write_text('{"verdict": {"task_id": "x"}}\n')
    with pytest.raises(VerdictsReadError, match=r"verdicts.jsonl:1: not a verdict row"):
        failure_cells(verdicts, tasks, "retail")
    with pytest.raises(InputError, match="both"):
        make_targets(_metrics(tmp_path), 10, verdicts=verdicts)


def test_targets_carry_cells_and_the_cli_writes_them(tmp_path):
    verdicts, tasks, *_ = _files(tmp_path, [lambda c, r: _row(c, False, ["invention"])])
    metrics = _metrics(tmp_path)
    targets = make_targets(metrics, 12, verdicts=verdicts, tasks=tasks, domain="retail")
    assert targets.cells == {"invention": {"cancel/plain/done": 1.0}}
    out = tmp_path / "targets.json"
    args = ["target", "--metrics", str(metrics), "--budget", "12", "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--verdicts", str(verdicts), "--tasks", str(tasks), "--domain", "retail"])
    assert result.exit_code == 0, result.output
    assert Targets.read(out) == targets and "cancel/plain/done" in result.output
    bad = CliRunner().invoke(app, [*args, "--verdicts", str(verdicts), "--tasks", str(tmp_path / "missing.jsonl")])
    assert bad.exit_code == 2 and "missing.jsonl" in bad.output
