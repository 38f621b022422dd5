"""A real `mlflow server` on loopback: log an iteration through MLFLOW_TRACKING_URI, read it back over plain HTTP."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest

from pipeline.metrics.headline import headline
from pipeline.tracking import (
    IterationTracker,
    TrackingConfig,
    champion_checkpoint,
    promote,
    register_checkpoint,
)
from tests.tracking.conftest import make_summary
from tests.tracking.server import serve_mlflow

pytestmark = pytest.mark.slow


@pytest.fixture
def mlflow_server(tmp_path, mlflow_template) -> Iterator[str]:
    with serve_mlflow(tmp_path, mlflow_template) as url:
        yield url


def _get(url: str, path: str, **query) -> dict:
    with urllib.request.urlopen(f"{url}{path}?{urllib.parse.urlencode(query)}", timeout=10) as r:
        return json.load(r)


def _post(url: str, path: str, body: dict) -> dict:
    req = urllib.request.Request(
        f"{url}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def test_iteration_logged_through_a_real_server_reads_back_over_rest(mlflow_server, monkeypatch, tmp_path):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    config = TrackingConfig()
    assert config.tracking_uri == mlflow_server
    baseline = make_summary("oracle", {"t-1": [True, False, True, True], "t-2": [False] * 4})
    candidate = make_summary("hf:ckpt", {"t-1": [True] * 4, "t-2": [True, True, False, True]})
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "model.safetensors").write_bytes(b"\x00weights" * 64)
    decision = {"promote": True, "interval": [0.05, 0.6], "reasons": ["lower bound 0.05 > margin 0.0"]}

    with IterationTracker(
        config, iteration=1, agent="hf:runs/ckpt", params={"gate": {"margin": 0.0}}, commit="feed"
    ) as it:
        with it.stage("measure", role="baseline") as st:
            st.log_summary(baseline)
        with it.stage("train") as st:
            version = register_checkpoint(it, ckpt)
        with it.stage("remeasure", role="candidate") as st:
            st.log_summary(candidate)
        with it.stage("gate") as st:
            assert st.log_gate(decision)
            promote(version, decision, tracker=it)
        gate = {"outcome": "promote", "pass_hat_k": {"k": 4, "diff": 0.5, "low": 0.05, "high": 0.6}}
        h = headline(1, "embedded", baseline, candidate, gate)
        it.log_headline(h.model_copy(update={"candidate_version": version, "champion_moved": True}))

    exp = _get(mlflow_server, "/api/2.0/mlflow/experiments/get-by-name", experiment_name="agentloop")["experiment"]
    found = _post(
        mlflow_server,
        "/api/2.0/mlflow/runs/search",
        {"experiment_ids": [exp["experiment_id"]], "filter": "tags.`agentloop.kind` = 'iteration'"},
    )["runs"]
    assert len(found) == 1
    run = _get(mlflow_server, "/api/2.0/mlflow/runs/get", run_id=found[0]["info"]["run_id"])["run"]
    assert run["info"]["run_name"] == f"iter-001 · embedded · promoted v{version}"
    assert run["info"]["status"] == "FINISHED"
    tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
    assert tags["agentloop.decision"] == "promote" and tags["agentloop.model_version"] == version
    metrics = {m["key"]: m["value"] for m in run["data"]["metrics"]}
    assert metrics["champion/pass_hat_4"] == 0.0 and metrics["candidate/pass_hat_4"] == 0.5
    assert metrics["candidate/pass_at_1"] == pytest.approx(0.875) and metrics["gain/low"] == 0.05
    assert tags["mlflow.note.content"].startswith("**pass^4 0.0% → 50.0% (+50.0 pp")
    children = _post(
        mlflow_server,
        "/api/2.0/mlflow/runs/search",
        {"experiment_ids": [exp["experiment_id"]], "filter": f"tags.`mlflow.parentRunId` = '{run['info']['run_id']}'"},
    )["runs"]
    assert sorted(r["info"]["run_name"] for r in children) == [
        "iter-001 · gate",
        "iter-001 · measure · baseline",
        "iter-001 · remeasure · candidate",
        "iter-001 · train",
    ]

    for alias in ("champion", "challenger"):
        mv = _get(mlflow_server, "/api/2.0/mlflow/registered-models/alias", name="agentloop-agent", alias=alias)
        assert mv["model_version"]["version"] == version
    assert mv["model_version"]["source"].startswith("mlflow-artifacts:/")
    got = champion_checkpoint(tmp_path / "fetched", config)
    assert (got / "model.safetensors").read_bytes() == (ckpt / "model.safetensors").read_bytes()
    assert (tmp_path / "served-artifacts").is_dir()  # artifacts went through the server, not to a local path
