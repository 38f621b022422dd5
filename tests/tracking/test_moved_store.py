"""A repository copied (or moved) with its mlruns.db writes its new artifacts into its own mlartifacts/, never
into the original's, and still reads the artifacts it brought along."""

from __future__ import annotations

import shutil
from pathlib import Path

from pipeline.tracking.config import TrackingConfig


def files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def log_one(config: TrackingConfig, tmp_path, name: str) -> str:
    client = config.client()
    run = client.create_run(config.experiment_id(client))
    note = tmp_path / f"{name}.txt"
    note.write_text(name)
    client.log_artifact(run.info.run_id, str(note))
    client.set_terminated(run.info.run_id)
    return run.info.run_id


def test_a_copied_store_writes_into_the_copy(tmp_path, mlflow_template):
    original = tmp_path / "original"
    original.mkdir()
    shutil.copy(mlflow_template, original / "mlruns.db")
    first = log_one(TrackingConfig(tracking_uri=f"sqlite:///{original / 'mlruns.db'}"), tmp_path, "first")
    before = files(original)
    assert any(f.startswith("mlartifacts/") for f in before)

    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    config = TrackingConfig(tracking_uri=f"sqlite:///{copy / 'mlruns.db'}")
    second = log_one(config, tmp_path, "second")

    assert files(original) == before  # nothing new in the original
    assert any(f.endswith("second.txt") for f in files(copy / "mlartifacts"))
    client = config.client()
    assert client.get_run(second).info.artifact_uri.startswith(str(copy / "mlartifacts"))
    assert client.get_run(first).info.artifact_uri.startswith(str(copy / "mlartifacts"))
    got = client.download_artifacts(first, "first.txt", str(tmp_path))
    assert Path(got).read_text() == "first"  # the copy's own artifacts, brought along
    log_one(config, tmp_path, "third")  # a second use changes nothing more
    assert files(original) == before


def test_an_explicit_artifact_location_is_kept(tmp_path, mlflow_template):
    store = tmp_path / "a"
    store.mkdir()
    shutil.copy(mlflow_template, store / "mlruns.db")
    elsewhere = tmp_path / "shared-artifacts"
    config = TrackingConfig(tracking_uri=f"sqlite:///{store / 'mlruns.db'}", artifact_location=str(elsewhere))
    log_one(config, tmp_path, "x")
    moved = tmp_path / "b"
    shutil.copytree(store, moved)
    again = TrackingConfig(tracking_uri=f"sqlite:///{moved / 'mlruns.db'}", artifact_location=str(elsewhere))
    run = log_one(again, tmp_path, "y")
    assert again.client().get_run(run).info.artifact_uri.startswith(str(elsewhere))
