"""Graded trials logged as traces through a real `mlflow server`, by the promote stage's own trace step, and read
back with `MlflowClient.search_traces`: one trace per trial, its tags, task sessions, verdict feedback, and the
"failed trials of one mode" filter; then the UI's runs and traces pages in headless Chromium. Two iterations are
logged, each with a measure and a remeasure stage run."""

from __future__ import annotations

import contextlib
import html
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from mlflow import MlflowClient

from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import write_tasks
from pipeline.loop.params import Params
from pipeline.loop.track import _traces
from pipeline.loop.track_inputs import LoopData
from pipeline.measure import MeasureConfig, measure
from pipeline.tracking import IterationTracker, TrackingConfig
from pipeline.tracking.traces import read_trials
from pipeline.world.registry import load_world
from tests.needs import need_module, need_tool
from tests.tracking.server import serve_mlflow

pytestmark = pytest.mark.slow

WORLD = "gen-11-12x40x80"
N_TASKS, TRIALS = 8, 2
# (iteration, stage, role, agent): the second iteration's baseline is the first one's candidate.
MEASURED = [
    (1, "measure", "baseline", "flawed:plan_adherence=0.5,invention=0.5,misread=0.5"),
    (1, "remeasure", "candidate", "flawed:plan_adherence=0.3,invention=0.3,misread=0.3,seed=1"),
    (2, "measure", "baseline", "flawed:plan_adherence=0.3,invention=0.3,misread=0.3,seed=1"),
    (2, "remeasure", "candidate", "flawed:plan_adherence=0.1,invention=0.2,misread=0.1,seed=2"),
]


def log_iterations(root: Path, url: str) -> dict:
    """Measure each agent of MEASURED on the same tasks, then log both iterations to the server at ``url`` the
    way `promote` does: a parent run per iteration, stage runs spanning the measure's own times, and the trials
    as traces by `pipeline.loop.track._traces`. Returns {(iteration, role): run_dir} and the experiment id."""
    tasks = root / "tasks.jsonl"
    write_tasks(tasks, generate_tasks(load_world(WORLD), N_TASKS, seed=3))
    done: dict[tuple[int, str], tuple[Path, tuple[float, float], object]] = {}
    for iteration, _, role, agent in MEASURED:
        run_dir = root / f"iter{iteration}-{role}"
        t0 = time.time()
        summary = measure(MeasureConfig(world=WORLD, tasks=tasks, agent=agent, trials=TRIALS, resamples=50), run_dir)
        done[(iteration, role)] = (run_dir, (t0, time.time()), summary)
    data = LoopData.read(tasks)  # in a cwd without the loop's other files: only the held-out set is there
    config = TrackingConfig(tracking_uri=url)
    for iteration in (1, 2):
        p = Params(loop={"iteration": iteration})
        agents = [m for m in MEASURED if m[0] == iteration]
        start = done[(iteration, "baseline")][1][0]
        with IterationTracker(
            config, iteration=iteration, agent=agents[-1][3], params=p.model_dump(mode="json"), start_time=start
        ) as it:
            for _, stage, role, _ in agents:
                run_dir, times, summary = done[(iteration, role)]
                with it.stage(stage, role=role, times=times) as run:
                    run.log_summary(summary, prefix=f"{role}/")
                    _traces(p, it, run, run_dir, role, data, times)
    return {"runs": {k: v[0] for k, v in done.items()}, "experiment_id": config.experiment_id(config.client())}


@pytest.fixture(scope="module")
def served(tmp_path_factory, mlflow_template):
    root = tmp_path_factory.mktemp("server-traces")
    mp = pytest.MonkeyPatch()
    mp.chdir(root)
    try:
        with serve_mlflow(root / "server", mlflow_template) as url:
            mp.setenv("MLFLOW_TRACKING_URI", url)
            logged = log_iterations(root, url)
            yield url, logged
    finally:
        mp.undo()


def _all(client: MlflowClient, exp: str, filter_string: str | None = None) -> list:
    out, token = [], None
    while True:
        page = client.search_traces(
            locations=[exp], filter_string=filter_string, max_results=100, page_token=token, include_spans=False
        )
        out += list(page)
        token = page.token
        if not token:
            return out


def test_one_trace_per_trial_with_tags_sessions_and_feedback(served):
    url, logged = served
    client = MlflowClient(tracking_uri=url)
    exp = logged["experiment_id"]
    traces = _all(client, exp)
    assert len(traces) == len(MEASURED) * N_TASKS * TRIALS
    by_trial = {}
    for t in traces:
        tags = t.info.tags
        key = (
            int(tags["agentloop.iteration"]),
            tags["agentloop.run"],
            tags["agentloop.task"],
            int(tags["agentloop.trial"]),
        )
        assert key not in by_trial, f"two traces for {key}"
        by_trial[key] = t
    sessions = Counter()
    for (iteration, role), run_dir in logged["runs"].items():
        for trial in read_trials(run_dir):
            traj, verdict, analysis = trial.trajectory, trial.verdict, trial.analysis
            trace = by_trial[(iteration, role, traj.task_id, traj.trial)]
            session = trace.info.trace_metadata["mlflow.trace.session"]
            assert session == f"iter-{iteration:03d}/{role}/{traj.task_id}"
            sessions[session] += 1
            assert trace.info.tags["agentloop.outcome"] == ("pass" if verdict.passed else "fail")
            feedback = {a.name: a.value for a in trace.info.assessments}
            assert feedback["passed"] is verdict.passed
            if not verdict.passed and analysis and analysis.modes:
                assert feedback["failure_modes"] == analysis.modes
                assert feedback["dominant_failure_mode"] == analysis.dominant
            else:
                assert "failure_modes" not in feedback
    assert set(sessions.values()) == {TRIALS} and len(sessions) == len(MEASURED) * N_TASKS  # a session per task

    # A session, as the UI's session view asks for it: one task's trials of one measurement, nothing else.
    one = next(iter(sessions))
    got = _all(client, exp, f"metadata.`mlflow.trace.session` = '{one}'")
    assert sorted(int(t.info.tags["agentloop.trial"]) for t in got) == list(range(TRIALS))


def test_traces_sit_under_their_stage_runs(served):
    url, logged = served
    client = MlflowClient(tracking_uri=url)
    exp = logged["experiment_id"]
    parents = client.search_runs([exp], filter_string="tags.`agentloop.kind` = 'iteration'")
    assert sorted(r.data.tags["agentloop.iteration"] for r in parents) == ["1", "2"]
    for parent in parents:
        stages = client.search_runs([exp], filter_string=f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
        assert sorted(r.data.tags["agentloop.stage"] for r in stages) == ["measure", "remeasure"]
        for run in stages:
            assert run.data.metrics["traces"] == N_TASKS * TRIALS
            assert run.data.tags["agentloop.timing"] == "recorded by the stage"
            linked = [t for t in _all(client, exp) if t.info.trace_metadata.get("mlflow.sourceRun") == run.info.run_id]
            assert {t.info.tags["agentloop.run"] for t in linked} == {run.data.tags["agentloop.role"]}
            assert len(linked) == N_TASKS * TRIALS


def test_failed_trials_of_one_mode_are_exactly_what_the_filter_returns(served):
    url, logged = served
    client = MlflowClient(tracking_uri=url)
    exp = logged["experiment_id"]
    expected: dict[str, set] = {}
    dominant: dict[str, set] = {}
    for (iteration, role), run_dir in logged["runs"].items():
        for trial in read_trials(run_dir):
            if trial.verdict.passed or not trial.analysis:
                continue
            key = (str(iteration), role, trial.trajectory.task_id, str(trial.trajectory.trial))
            for mode in trial.analysis.modes:
                expected.setdefault(mode, set()).add(key)
            if trial.analysis.dominant:
                dominant.setdefault(trial.analysis.dominant, set()).add(key)
    assert len(expected) >= 2, f"too few modes planted to tell filters apart: {sorted(expected)}"

    def keys(traces) -> set:
        tags = [t.info.tags for t in traces]
        return {(g["agentloop.iteration"], g["agentloop.run"], g["agentloop.task"], g["agentloop.trial"]) for g in tags}

    for mode, want in expected.items():
        by_tag = _all(
            client,
            exp,
            f"tags.`agentloop.outcome` = 'fail' AND tags.`agentloop.failure_modes` LIKE '%{mode}%'",
        )
        assert keys(by_tag) == want, mode
    for mode, want in dominant.items():
        assert keys(_all(client, exp, f"feedback.dominant_failure_mode = '{mode}'")) == want, mode
        in_two = _all(client, exp, f"feedback.dominant_failure_mode = '{mode}' AND tags.`agentloop.iteration` = '2'")
        assert keys(in_two) == {k for k in want if k[0] == "2"}, mode


def _page(url: str, profile: Path) -> str:
    """The page's DOM after its scripts ran (headless Chromium, virtual time so the API calls settle)."""
    chromium = need_tool("chromium", "chromium-browser", install="apt-get install chromium")
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=1600,1000",
            "--virtual-time-budget=25000",
            f"--user-data-dir={profile}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0 and done.stdout, done.stderr[-2000:]
    return done.stdout


def test_the_ui_shows_the_iterations_and_their_traces(served, tmp_path):
    url, logged = served
    exp = logged["experiment_id"]
    client = MlflowClient(tracking_uri=url)
    runs_page = _page(f"{url}/#/experiments/{exp}/runs", tmp_path / "profile")
    for parent in client.search_runs([exp], filter_string="tags.`agentloop.kind` = 'iteration'"):
        assert html.escape(parent.info.run_name, quote=False) in runs_page
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", runs_page))
    assert re.search(r"\b6 matching runs", text)  # two iterations, each with its measure and remeasure stage run

    traces_page = _page(f"{url}/#/experiments/{exp}/traces", tmp_path / "profile")
    shown = set(re.findall(r"tr-[0-9a-f]{32}", traces_page))
    stored = {t.info.trace_id for t in _all(client, exp)}
    assert shown and shown <= stored
    sessions = {t.info.trace_metadata["mlflow.trace.session"] for t in _all(client, exp)}
    assert any(s in traces_page for s in sessions)  # the Session column
    assert "agentloop.outcome" in traces_page and "dominant_failure_mode" in traces_page


def test_in_the_ui_a_user_filters_failed_trials_of_one_mode_and_reads_one(served, tmp_path):
    """Clicked through in a real browser, as a user would: Filters → Feedback → dominant_failure_mode = <mode>,
    then open a trace; the rows are exactly the trials the verdict files give, the trace shows the conversation
    and tool calls, and the state-diff feedback reads as text."""
    url, logged = served
    exp = logged["experiment_id"]
    chromium = need_tool("chromium", "chromium-browser", install="apt-get install chromium")
    sync_api = need_module("playwright.sync_api", install="pip install playwright")
    dominant: dict[str, list] = {}
    for run_dir in logged["runs"].values():
        for trial in read_trials(run_dir):
            if not trial.verdict.passed and trial.analysis and trial.analysis.dominant:
                dominant.setdefault(trial.analysis.dominant, []).append(trial)
    mode, trials = max(dominant.items(), key=lambda kv: len(kv[1]))
    assert len(trials) <= 25, "the check reads one page of the table"
    client = MlflowClient(tracking_uri=url)
    want = {t.info.trace_id for t in _all(client, exp, f"feedback.dominant_failure_mode = '{mode}'")}
    assert len(want) == len(trials)

    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(f"{url}/#/experiments/{exp}/traces")
            page.locator("input[aria-label^='Select trace tr-']").first.wait_for()
            with contextlib.suppress(sync_api.TimeoutError):  # a first-visit tip that holds the focus
                page.get_by_role("button", name="Got it").click(timeout=10_000)
            page.get_by_role("button", name="Filters").click()
            page.get_by_role("combobox", name="Filter field").click()
            page.get_by_role("option", name="Feedback", exact=True).click()
            page.get_by_role("combobox", name="Filter key").click()
            page.get_by_role("option", name="dominant_failure_mode", exact=True).click()
            page.get_by_label("Filter value").fill(mode)
            page.get_by_role("button", name="Apply filters").click()
            page.get_by_text(f"{len(want)} of ").wait_for()  # the table's count line
            boxes = page.locator("input[aria-label^='Select trace tr-']")
            shown = {b.get_attribute("aria-label").removeprefix("Select trace ") for b in boxes.all()}
            assert shown == want
            page.screenshot(path=str(tmp_path / "filtered.png"))

            first = sorted(trials, key=lambda t: (t.trajectory.task_id, t.trajectory.trial))[0].trajectory
            opening = next(m.content for m in first.messages if m.role == "user")
            page.get_by_text(opening[:40]).first.click()
            page.get_by_text(f"{first.task_id} #{first.trial}").first.wait_for()
            text = page.locator("body").inner_text()
            assert all(c.name in text for c in first.tool_calls())  # the tool-call spans and the chat view
            assert "[object Object]" not in text
        finally:
            browser.close()
