"""Parent run per iteration, nested stage runs, metrics, tags and artifacts on a file sqlite store."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.tracking import IterationTracker, TrackingConfig
from pipeline.tracking.config import DB_NAME, repo_root

PARAMS = {"measure": {"k": 4, "tasks": 8}, "gate": {"margin": 0.0, "confidence": 0.95}}
HASHES = {"measure": "aaaaaaaaaaaa", "gate": "bbbbbbbbbbbb"}


def _runs(config: TrackingConfig):
    client = config.client()
    exp = client.get_experiment_by_name(config.experiment)
    return client, client.search_runs([exp.experiment_id], order_by=["attributes.start_time ASC"])


def _artifacts(client, run_id, path=None) -> set[str]:
    out = set()
    for f in client.list_artifacts(run_id, path):
        out |= _artifacts(client, run_id, f.path) if f.is_dir else {f.path}
    return out


def test_default_store_is_a_sqlite_file_in_the_repo_root(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    (tmp_path / ".git").mkdir()
    (tmp_path / "stages").mkdir()
    monkeypatch.chdir(tmp_path / "stages")
    config = TrackingConfig()
    assert repo_root() == tmp_path.resolve()
    assert config.tracking_uri == f"sqlite:///{tmp_path.resolve() / DB_NAME}"
    assert config.experiment_artifact_location() == str(tmp_path.resolve() / "mlartifacts")
    assert (config.experiment, config.model_name) == ("agentloop", "agentloop-agent")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    assert TrackingConfig().tracking_uri == "http://127.0.0.1:5000"
    assert TrackingConfig().experiment_artifact_location() is None


def test_iteration_with_nested_stages_metrics_tags_and_artifacts(tracking, summary, tmp_path):
    report = tmp_path / "report.html"
    report.write_text("<html>report</html>")
    manifest_dir = tmp_path / "manifests"
    manifest_dir.mkdir()
    (manifest_dir / "tasks.json").write_text("{}")
    (manifest_dir / "train.json").write_text("[]")

    with IterationTracker(
        tracking,
        iteration=3,
        agent="hf:runs/iter-003/checkpoint",
        params=PARAMS,
        stage_hashes=HASHES,
        commit="0123456789abcdef",
    ) as it:
        with it.stage("measure", role="baseline") as st:
            st.log_summary(summary)
            st.log_artifact(manifest_dir)
        with it.stage("gate") as st:
            decision = {"promote": False, "interval": [-0.05, 0.1], "reasons": ["lower bound -0.05 <= margin 0.0"]}
            promoted = st.log_gate(decision)
        it.log_artifact(report, "report")

    assert promoted is False
    client, runs = _runs(tracking)
    parent = next(r for r in runs if r.data.tags["agentloop.kind"] == "iteration")
    stages = {r.data.tags["agentloop.stage"]: r for r in runs if r.data.tags["agentloop.kind"] == "stage"}
    assert len(runs) == 3 and set(stages) == {"measure", "gate"}

    assert parent.info.run_name == "iter-003 · hf:checkpoint · 0123456"
    assert parent.info.status == "FINISHED"
    tags = parent.data.tags
    assert tags["agentloop.iteration"] == "3"
    assert tags["mlflow.source.git.commit"] == tags["agentloop.git_commit"] == "0123456789abcdef"
    assert tags["dvc.stage.measure"] == "aaaaaaaaaaaa" and tags["dvc.stage.gate"] == "bbbbbbbbbbbb"
    assert tags["agentloop.decision"] == "blocked"
    assert parent.data.params == {
        "measure.k": "4",
        "measure.tasks": "8",
        "gate.margin": "0.0",
        "gate.confidence": "0.95",
    }

    measure = stages["measure"]
    assert measure.info.run_name == "iter-003 · measure · baseline"
    assert measure.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert measure.data.tags["agentloop.role"] == "baseline"
    assert measure.data.tags["dvc.stage_hash"] == "aaaaaaaaaaaa"
    # a stage run's keys carry no role (measure and remeasure line up); the iteration row holds the headline only
    assert measure.data.metrics["pass_hat_k/4"] == 0.25
    assert measure.data.metrics["pass_at_k/2"] == 0.75
    assert measure.data.metrics["failure_mode/invention/trials"] == 0.375
    assert measure.data.metrics["diff/wrong_value/tasks"] == 0.75
    assert not any(k.startswith(("pass_", "failure_mode", "diff/")) for k in parent.data.metrics)
    curve = client.get_metric_history(measure.info.run_id, "curve/pass_hat_k")
    assert sorted((m.step, m.value) for m in curve) == [(1, 0.625), (2, 0.5), (3, 0.375), (4, 0.25)]
    assert _artifacts(client, measure.info.run_id) == {"manifests/tasks.json", "manifests/train.json"}

    gate = stages["gate"]
    assert gate.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert gate.data.tags["agentloop.decision"] == "blocked"
    assert gate.data.tags["agentloop.gate_reasons"] == "lower bound -0.05 <= margin 0.0"
    assert gate.data.metrics["gate/promote"] == 0.0 and parent.data.metrics["gate/interval_low"] == -0.05
    assert _artifacts(client, parent.info.run_id) == {"report/report.html"}
    artifact_root = Path(tracking.tracking_uri.removeprefix("sqlite:///")).parent / "mlartifacts"
    assert parent.info.artifact_uri == str(artifact_root / parent.info.run_id / "artifacts")
    assert (Path(parent.info.artifact_uri) / "report/report.html").read_text() == "<html>report</html>"


def test_stages_in_separate_processes_share_one_parent_per_configuration(tracking, summary):
    kw = dict(iteration=1, agent="oracle", params=PARAMS, commit="abc")
    with IterationTracker(tracking, **kw) as it, it.stage("measure") as st:
        st.log_summary(summary)
    with IterationTracker(tracking, **kw, stage_hashes=HASHES) as again, again.stage("remeasure") as st:
        st.log_summary(summary)
    assert again.resumed and again.run_id == it.run_id
    changed = {**PARAMS, "gate": {"margin": 0.05, "confidence": 0.95}}
    with IterationTracker(tracking, **{**kw, "params": changed}) as other:
        pass
    assert not other.resumed and other.run_id != it.run_id
    with IterationTracker(tracking, **{**kw, "commit": "def"}) as racing:  # another push at the same iteration
        pass
    assert not racing.resumed and racing.run_id != it.run_id

    client, runs = _runs(tracking)
    parent = client.get_run(it.run_id)
    assert parent.data.tags["dvc.stage.gate"] == "bbbbbbbbbbbb"  # tags are refreshed on resume
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == it.run_id]
    assert sorted(r.data.tags["agentloop.stage"] for r in children) == ["measure", "remeasure"]
    assert {r.data.metrics["pass_at_1"] for r in children} == {summary.pass_at_1}
    assert client.get_run(other.run_id).data.params["gate.margin"] == "0.05"


def test_a_failing_stage_marks_stage_and_iteration_failed(tracking):
    with (
        pytest.raises(RuntimeError, match="boom"),
        IterationTracker(tracking, iteration=2, agent="oracle", commit="c") as it,
        it.stage("train"),
    ):
        raise RuntimeError("boom")
    client, runs = _runs(tracking)
    status = {r.data.tags["agentloop.kind"]: r.info.status for r in runs}
    assert status == {"iteration": "FAILED", "stage": "FAILED"}
    assert client.get_run(it.run_id).data.tags["agentloop.failed_stage"] == "train"


def test_logging_an_iteration_again_reuses_its_stage_runs(tracking, summary):
    """`promote` rerun four times lists each stage once: the same execution (name, role, stage hash, params) is
    found again and updated; a changed execution is a run of its own."""
    kw = dict(iteration=3, agent="oracle", params=PARAMS, commit="abc", stage_hashes=HASHES)
    for _ in range(4):
        with IterationTracker(tracking, **kw) as it:
            with it.stage("measure", role="baseline", params={"k": 4}, times=(1000.0, 1010.0)) as st:
                st.log_summary(summary)
            with it.stage("gate"):
                pass
    with IterationTracker(tracking, **kw) as it, it.stage("measure", role="baseline", params={"k": 8}):
        pass
    client, runs = _runs(tracking)
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == it.run_id]
    assert sorted(r.data.tags["agentloop.stage"] for r in children) == ["gate", "measure", "measure"]
    assert {r.info.status for r in children} == {"FINISHED"}
    assert sorted(r.data.params.get("k", "") for r in children) == ["", "4", "8"]


def test_an_experiment_another_run_created_meanwhile_is_used(tracking, monkeypatch):
    """Two first runs on an empty store: both find no experiment, one creates it; the other uses it."""
    from mlflow import MlflowClient

    made = tracking.client().create_experiment(tracking.experiment)
    real = MlflowClient.get_experiment_by_name
    calls = []

    def not_yet(self, name):  # the first look happens before the other run created it
        calls.append(name)
        return None if len(calls) == 1 else real(self, name)

    monkeypatch.setattr(MlflowClient, "get_experiment_by_name", not_yet)
    assert tracking.experiment_id() == made
