"""`promote` over a real (reduced) iteration, run stage by stage in-process: stage runs carry the stages' own
recorded times, datasets are linked with their contexts, and both measurements are there as traces."""

from __future__ import annotations

import shutil

import pytest
import yaml

from pipeline.loop import stages as fn
from pipeline.loop.entry import run_stage
from pipeline.loop.stage_times import read_stage_time
from pipeline.loop.track import TRACKED_STAGES, track_and_promote
from pipeline.tracking import TrackingConfig
from tests.loop.loop_helpers import REDUCED, ROOT

pytestmark = pytest.mark.slow

STEPS = [
    ("eval_tasks", fn.make_eval_tasks),
    ("baseline", fn.build_baseline),
    ("measure", fn.measure_baseline),
    ("target", fn.make_targets),
    ("synthesize", fn.synthesize),
    ("curate", fn.curate),
    ("train", fn.train_candidate),
    ("remeasure", fn.remeasure_candidate),
    ("gate", fn.gate),
    ("report", fn.report),
]


@pytest.fixture(scope="module")
def iteration(tmp_path_factory):
    """The loop's stages on the reduced configuration, in a scratch directory, each through `run_stage`."""
    work = tmp_path_factory.mktemp("iteration")
    shutil.copytree(ROOT / "stages", work / "stages")
    params = {k: dict(v) for k, v in REDUCED.items() if k != "embedded"}
    params["synthesize"] = {"anchors": 6}
    params["curate"]["max_items"] = 10
    (work / "params.yaml").write_text(yaml.safe_dump(params))
    db = work / "mlruns.db"
    mp = pytest.MonkeyPatch()
    mp.chdir(work)
    mp.setenv("AGENTLOOP_PARAMS", str(work / "params.yaml"))
    mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    try:
        for name, step in STEPS:
            run_stage(name, step)
        result = run_stage("promote", track_and_promote)
        yield work, result, TrackingConfig()
    finally:
        mp.undo()


def test_stage_runs_span_the_stages_recorded_times(iteration):
    work, result, config = iteration
    client = config.client()
    parent = client.get_run(result["run_id"])
    children = client.search_runs(
        [parent.info.experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'"
    )
    runs = {r.data.tags["agentloop.stage"]: r for r in children}
    assert set(runs) == {*TRACKED_STAGES, "promote"}
    for name in TRACKED_STAGES:
        rec = read_stage_time(name, work / "runs" / "stage_times")
        run = runs[name]
        assert (run.info.start_time, run.info.end_time) == (int(rec.start * 1000), int(rec.end * 1000))
        assert run.data.metrics["stage_seconds"] == pytest.approx(rec.end - rec.start)
        assert parent.data.metrics[f"stage_seconds/{name}"] == pytest.approx(rec.end - rec.start)
        assert run.data.tags["agentloop.timing"] == "recorded by the stage"
        assert run.data.tags["agentloop.reused"] == "false"
    first = read_stage_time("eval_tasks", work / "runs" / "stage_times")
    assert parent.info.start_time == int(first.start * 1000)  # the iteration spans the whole repro
    assert runs["measure"].data.tags["mlflow.note.content"] == "the baseline on the held-out tasks, k trials each."
    assert runs["measure"].info.run_name == "iter-001 · measure · baseline"


def test_datasets_are_inputs_with_contexts(iteration):
    _, result, config = iteration
    client = config.client()
    parent = client.get_run(result["run_id"])
    children = client.search_runs(
        [parent.info.experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'"
    )
    used = {
        r.data.tags["agentloop.stage"]: {
            (d.dataset.name, next(t.value for t in d.tags if t.key == "mlflow.data.context"))
            for d in r.inputs.dataset_inputs
        }
        for r in children
    }
    assert used["measure"] == used["remeasure"] == used["gate"] == {("held-out tasks", "evaluation")}
    assert used["eval_tasks"] == {("held-out tasks", "output")}
    assert used["synthesize"] == {("synthesized pool", "output"), ("anchors", "output")}
    assert used["curate"] == {("synthesized pool", "pool"), ("curated selection", "output")}
    assert used["train"] == set()  # train.method agent:oracle learns from nothing
    evals = [d.dataset for r in children for d in r.inputs.dataset_inputs if d.dataset.name == "held-out tasks"]
    assert len({d.digest for d in evals}) == 1 and evals[0].source_type == "local"
    assert '"num_rows": 24' in evals[0].profile and "task_id" in evals[0].schema


def test_both_measurements_are_traces_under_their_stage_runs(iteration):
    import mlflow

    _, result, config = iteration
    client = config.client()
    parent = client.get_run(result["run_id"])
    exp = parent.info.experiment_id
    mlflow.set_tracking_uri(config.tracking_uri)
    try:
        for role, stage in (("baseline", "measure"), ("candidate", "remeasure")):
            where = f"tags.`agentloop.stage` = '{stage}' AND tags.`mlflow.parentRunId` = '{parent.info.run_id}'"
            run = client.search_runs([exp], filter_string=where)[0]
            traces = mlflow.search_traces(
                locations=[exp], run_id=run.info.run_id, return_type="list", include_spans=False
            )
            assert len(traces) == 24 * 2 == run.data.metrics["traces"]
            assert {t.info.tags["agentloop.run"] for t in traces} == {role}
            assert all(t.info.tags.get("agentloop.template") for t in traces)
    finally:
        mlflow.set_tracking_uri(None)


def test_the_iteration_run_carries_the_headline_and_the_history_plot(iteration):
    work, result, config = iteration
    client = config.client()
    parent = client.get_run(result["run_id"])
    word = {"promote": "promoted v1", "block": "blocked", "inconclusive": "inconclusive"}[result["gate_outcome"]]
    assert parent.info.run_name == f"iter-001 · flawed · {word}"
    assert parent.data.tags["mlflow.note.content"].startswith("**pass^2 ")
    metrics = sorted(parent.data.metrics)
    assert {"candidate/pass_at_1", "candidate/pass_hat_2", "candidate/act_pass_hat_2"} <= set(metrics)
    assert [m for m in metrics if not m.startswith("stage_seconds/")] == metrics[: -len(TRACKED_STAGES)]
    assert {f.path for f in client.list_artifacts(parent.info.run_id)} == {"iterations.png"}
    assert (work / "metrics" / "gate.json").exists() and (work / "metrics" / "candidate.json").exists()
