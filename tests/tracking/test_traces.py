"""Graded trials as MLflow traces on a real sqlite store: spans, tags, sessions, feedback, filters, reruns."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3

import mlflow
import pytest

from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import read_tasks, write_tasks
from pipeline.measure import MeasureConfig, measure
from pipeline.tracking.trace_spans import trial_spans
from pipeline.tracking.traces import TraceInputError, batch_trace_ids, log_trial_traces, read_trials
from pipeline.world.registry import load_world

WORLD = "gen-11-12x40x80"
TOKENS = {"prompt_tokens": 120, "completion_tokens": 30, "compute_s": 0.0}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A real measurement of a flawed agent (8 tasks × 2 trials), with token usage written into the agent turns
    (scripted agents report none) so that the trace's token totals can be checked."""
    root = tmp_path_factory.mktemp("traces")
    write_tasks(root / "tasks.jsonl", generate_tasks(load_world(WORLD), 8, seed=3))
    config = MeasureConfig(
        world=WORLD,
        tasks=root / "tasks.jsonl",
        agent="flawed:plan_adherence=0.5,invention=0.5,misread=0.5",
        trials=2,
        resamples=50,
    )
    summary = measure(config, root / "run")
    path = root / "run" / "trajectories.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        for m in row["messages"]:
            if m["role"] == "assistant":
                m["usage"] = TOKENS
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root / "run", summary


def _store(tracking):
    client = tracking.client()
    exp = tracking.experiment_id(client)
    run = client.create_run(exp, run_name="iter-001 · measure · baseline")
    return client, exp, run.info.run_id


def _log(tracking, exp, run_id, run_dir, **kw):
    return log_trial_traces(
        tracking.tracking_uri, exp, run_id, run_dir, role="baseline", iteration=1, run_key="iter-001/abc", **kw
    )


def test_each_trial_is_a_trace_with_spans_tags_session_and_verdict(tracking, measured):
    run_dir, summary = measured
    client, exp, run_id = _store(tracking)
    templates = {t.id: t.provenance.template for t in read_tasks(run_dir.parent / "tasks.jsonl")}
    got = _log(tracking, exp, run_id, run_dir, templates=templates)
    assert got["traces"] == got["logged"] == 16
    assert os.environ.get("MLFLOW_TRACKING_URI") is None  # the global URI is restored (it was unset)

    traces = client.search_traces(locations=[exp], max_results=100)
    assert len(traces) == 16
    trials = {(t.trajectory.task_id, t.trajectory.trial): t for t in read_trials(run_dir)}
    for trace in traces:
        tags, meta = trace.info.tags, trace.info.trace_metadata
        trial = trials[(tags["agentloop.task"], int(tags["agentloop.trial"]))]
        traj = trial.trajectory
        assert tags["agentloop.iteration"] == "1" and tags["agentloop.run"] == "baseline"
        assert tags["agentloop.template"] == templates[traj.task_id]
        assert tags["agentloop.outcome"] == ("pass" if trial.verdict.passed else "fail")
        assert meta["mlflow.trace.session"] == f"iter-001/baseline/{traj.task_id}"
        assert meta["mlflow.sourceRun"] == run_id
        spans = trace.data.spans
        root = next(s for s in spans if s.parent_id is None)
        assert root.name == f"{traj.task_id} #{traj.trial}"
        assert [s.span_type for s in spans].count("CHAT_MODEL") == sum(m.role == "assistant" for m in traj.messages)
        assert [s.span_type for s in spans].count("USER") == sum(m.role == "user" for m in traj.messages)
        tools = [s for s in spans if s.span_type == "TOOL"]
        assert [s.name for s in tools] == [c.name for c in traj.tool_calls()]
        by_id = {s.span_id: s for s in spans}
        assert all(by_id[s.parent_id].span_type == "CHAT_MODEL" for s in tools)  # under the turn that called it
        if tools:
            call = traj.tool_calls()[0]
            assert tools[0].inputs == call.arguments
        n_agent = sum(m.role == "assistant" for m in traj.messages)
        assert trace.info.token_usage["input_tokens"] == 120 * n_agent
        assert trace.info.token_usage["output_tokens"] == 30 * n_agent
        feedback = {a.name: a for a in trace.info.assessments}
        assert feedback["passed"].value is trial.verdict.passed
        assert feedback["passed"].source.source_id == "agentloop.grader"
        diff = feedback["state_diff"]
        assert isinstance(diff.value, str)  # a mapping shows as [object Object] in the trace table
        counts = {k: int(diff.metadata[k]) for k in ("wrong_value", "unrequested_change", "missing_change")}
        assert sum(counts.values()) == len(trial.verdict.diffs)
        assert (diff.value == "no difference") == (not trial.verdict.diffs)
        assert all(f"{n} {k}" in diff.value for k, n in counts.items() if n)
        if not trial.verdict.passed and trial.analysis and trial.analysis.modes:
            assert feedback["failure_modes"].value == trial.analysis.modes
            assert feedback["dominant_failure_mode"].value == trial.analysis.dominant
        else:
            assert "failure_modes" not in feedback
    assert sum(t.info.tags["agentloop.outcome"] == "fail" for t in traces) == round(16 * (1 - summary.pass_at_1))


def test_failed_trials_of_one_mode_are_found_by_filter(tracking, measured):
    run_dir, _ = measured
    client, exp, run_id = _store(tracking)
    _log(tracking, exp, run_id, run_dir)
    modes = [t.analysis.dominant for t in read_trials(run_dir) if t.analysis and t.analysis.dominant]
    mode = max(set(modes), key=modes.count)
    mlflow.set_tracking_uri(tracking.tracking_uri)
    try:
        by_feedback = mlflow.search_traces(
            locations=[exp], filter_string=f"feedback.dominant_failure_mode = '{mode}'", return_type="list"
        )
        by_tag = mlflow.search_traces(
            locations=[exp],
            filter_string=f"tags.`agentloop.outcome` = 'fail' AND tags.`agentloop.dominant_mode` = '{mode}'",
            return_type="list",
        )
        in_run = mlflow.search_traces(locations=[exp], run_id=run_id, return_type="list", include_spans=False)
    finally:
        mlflow.set_tracking_uri(None)
    assert len(by_feedback) == len(by_tag) == modes.count(mode) > 0
    assert {t.info.trace_id for t in by_feedback} == {t.info.trace_id for t in by_tag}
    for t in by_feedback:
        assert {a.name: a.value for a in t.info.assessments}["passed"] is False
        assert t.info.request_preview and "###STOP###" not in t.info.request_preview  # the opening request
    assert len(in_run) == 16


def test_a_rerun_adds_nothing_and_a_cut_short_batch_is_replaced_whole(tracking, measured):
    run_dir, _ = measured
    client, exp, run_id = _store(tracking)
    first = _log(tracking, exp, run_id, run_dir)
    again = _log(tracking, exp, run_id, run_dir)
    assert (again["traces"], again["logged"], again["batch"]) == (16, 0, first["batch"])
    ids = batch_trace_ids(client, exp, first["batch"])
    client.delete_traces(exp, trace_ids=ids[:5])
    redo = _log(tracking, exp, run_id, run_dir)
    assert redo["logged"] == 16 and len(client.search_traces(locations=[exp], max_results=100)) == 16
    assert sorted(batch_trace_ids(client, exp, first["batch"])) == sorted(ids)  # ids follow from the files


def test_every_span_reaches_the_store_and_sqlite_is_left_in_wal_mode(tracking, measured):
    run_dir, _ = measured
    client, exp, run_id = _store(tracking)
    _log(tracking, exp, run_id, run_dir)
    expected = {
        (t.trajectory.task_id, t.trajectory.trial): len(trial_spans(t.trajectory)) for t in read_trials(run_dir)
    }
    traces = client.search_traces(locations=[exp], max_results=100)
    got = {(t.info.tags["agentloop.task"], int(t.info.tags["agentloop.trial"])): len(t.data.spans) for t in traces}
    assert got == expected
    assert all(t.info.request_preview and t.info.state.value in ("OK", "ERROR") for t in traces)
    db = tracking.tracking_uri.removeprefix("sqlite:///")
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_unreadable_measurement_files_name_file_and_line(tmp_path, measured):
    run_dir, _ = measured
    with pytest.raises(TraceInputError, match="trajectories.jsonl: file not found"):
        read_trials(tmp_path)
    bad = tmp_path / "bad"
    shutil.copytree(run_dir, bad)
    lines = (bad / "verdicts.jsonl").read_text().splitlines()
    (bad / "verdicts.jsonl").write_text("\n".join([lines[1], lines[0], *lines[2:]]) + "\n")
    with pytest.raises(TraceInputError, match=r"verdicts.jsonl:1: verdict of .* beside trajectory"):
        read_trials(bad)
    (bad / "verdicts.jsonl").write_text("\n".join(lines[:3]) + "\n")
    with pytest.raises(TraceInputError, match="verdicts.jsonl: ends before trajectory line 4"):
        read_trials(bad)
