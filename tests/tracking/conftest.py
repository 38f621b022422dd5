"""Fixtures for the tracking tests: a migrated sqlite store copied per test (migrations run once per session)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.grading.failure_modes import FailureAnalysis
from pipeline.metrics.summary import MeasureSummary, TrialRecord, summarize
from pipeline.tracking import TrackingConfig


@pytest.fixture(scope="session")
def mlflow_template(tmp_path_factory) -> Path:
    """An empty MLflow sqlite database with every migration applied."""
    db = tmp_path_factory.mktemp("mlflow-template") / "template.db"
    TrackingConfig(tracking_uri=f"sqlite:///{db}").client().search_experiments()
    return db


@pytest.fixture
def tracking(tmp_path, mlflow_template, monkeypatch) -> Iterator[TrackingConfig]:
    """A fresh store; the test runs in an empty cwd that must stay empty (nothing may fall back to MLflow's
    cwd-relative defaults such as ./mlflow.db or ./mlruns)."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    db = tmp_path / "store" / "mlruns.db"
    db.parent.mkdir()
    shutil.copy(mlflow_template, db)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    yield TrackingConfig(tracking_uri=f"sqlite:///{db}")
    assert list(cwd.iterdir()) == [], "MLflow wrote into the working directory"


def make_summary(agent: str, passes: dict[str, list[bool]]) -> MeasureSummary:
    """A real summary from constructed trials; failures are diagnosed as invention with a wrong value."""
    records = []
    for task_id, outcomes in passes.items():
        for trial, ok in enumerate(outcomes):
            analysis = None if ok else FailureAnalysis(modes=["invention"], dominant="invention", looked_complete=True)
            records.append(
                TrialRecord(
                    task_id=task_id,
                    trial=trial,
                    template=task_id.split("-")[0],
                    passed=ok,
                    diff_kinds=[] if ok else ["wrong_value"],
                    analysis=analysis,
                    cost=0.01,
                )
            )
    return summarize(records, agent=agent, max_k=4, resamples=200)


@pytest.fixture
def summary() -> MeasureSummary:
    return make_summary(
        "flawed:invention=0.3",
        {
            "cancel-1": [True, True, True, True],
            "cancel-2": [True, False, True, True],
            "return-1": [False, False, False, False],
            "return-2": [True, True, False, True],
        },
    )
