"""The loop's data as MLflow datasets on a sqlite store, and the model version that records what trained it."""

from __future__ import annotations

import json

import pytest

from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import write_tasks
from pipeline.tracking import IterationTracker, register_checkpoint
from pipeline.tracking.datasets import (
    DatasetFileError,
    build_dataset,
    curated,
    dataset_tags,
    eval_tasks,
    log_datasets,
)
from pipeline.world.registry import load_world


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "tasks.jsonl"
    write_tasks(path, generate_tasks(load_world("gen-11-12x40x80"), 6, seed=1))
    return path


def _selected(path, n):
    rows = [
        {"task_id": f"t-{i}", "role": "target", "probes": 2, "passes": 1, "band": "0.4-0.7", "trajectory": {}}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_dataset_rows_schema_and_a_digest_of_the_bytes(tasks_file, tmp_path):
    ds = build_dataset(eval_tasks(tasks_file))
    assert ds.name == "held-out tasks" and ds.profile["num_rows"] == 6
    assert list(ds.df.columns[:3]) == ["task_id", "world", "template"] and "sha256" in ds.df.columns
    assert ds.df["task_id"].tolist() == [json.loads(line)["id"] for line in tasks_file.read_text().splitlines()]
    assert build_dataset(eval_tasks(tasks_file)).digest == ds.digest
    copy = tmp_path / "tasks.jsonl"
    copy.write_text(tasks_file.read_text().replace("\n", "\n\n", 1))  # same rows, other bytes
    assert build_dataset(eval_tasks(copy)).digest != ds.digest
    bad = tmp_path / "bad.jsonl"
    bad.write_text(tasks_file.read_text().splitlines()[0] + '\n{"no_id": 1}\n')
    with pytest.raises(DatasetFileError, match=r"bad.jsonl:2: not a record of 'held-out tasks'"):
        build_dataset(eval_tasks(bad))
    with pytest.raises(DatasetFileError, match="missing.jsonl: file not found"):
        build_dataset(curated(tmp_path / "missing.jsonl"))


def test_runs_link_datasets_and_the_model_version_names_its_training_data(tracking, tasks_file, tmp_path):
    held_out = build_dataset(eval_tasks(tasks_file))
    selection = build_dataset(curated(_selected(tmp_path / "selected.jsonl", 5)))
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "model.safetensors").write_bytes(b"w" * 32)
    with IterationTracker(tracking, iteration=1, agent="hf:ckpt", commit="c1") as it:
        with it.stage("measure", role="baseline") as st:
            log_datasets(it.client, st.run_id, [(held_out, "evaluation")])
        with it.stage("train") as st:
            log_datasets(it.client, st.run_id, [(selection, "training")])
            version = register_checkpoint(it, ckpt, tags=dataset_tags([selection]))
    with IterationTracker(tracking, iteration=2, agent="hf:ckpt", commit="c2") as it2, it2.stage("measure") as st2:
        log_datasets(it2.client, st2.run_id, [(build_dataset(eval_tasks(tasks_file)), "evaluation")])

    client = tracking.client()
    mv = client.get_model_version(tracking.model_name, version)
    assert mv.tags["agentloop.data.curated_selection"] == selection.digest
    assert mv.tags["agentloop.data.curated_selection.rows"] == "5"
    trained = client.get_run(mv.run_id).inputs.dataset_inputs
    assert [(d.dataset.name, d.dataset.digest, d.tags[0].value) for d in trained] == [
        ("curated selection", selection.digest, "training")
    ]
    evals = client.get_run(st2.run_id).inputs.dataset_inputs[0].dataset
    assert evals.digest == held_out.digest and json.loads(evals.profile)["num_rows"] == 6
    assert json.loads(evals.source) == {"uri": str(tasks_file)} and evals.source_type == "local"
    assert "task_id" in evals.schema  # the second iteration's held-out set is the same dataset


def test_a_dataset_another_run_inserted_meanwhile_is_linked(tracking, tasks_file, monkeypatch):
    """Two racing runs log one new dataset: the server's insert of the later one violates the dataset's key
    (PostgreSQL's UniqueViolation); the run links the dataset the other inserted instead of failing."""
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    real, calls = MlflowClient.log_inputs, []

    def raced(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise MlflowException(
                '(psycopg.errors.UniqueViolation) duplicate key value violates unique constraint "dataset_pk"'
            )
        return real(self, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "log_inputs", raced)
    held_out = build_dataset(eval_tasks(tasks_file))
    with IterationTracker(tracking, iteration=1, agent="hf:ckpt", commit="c1") as it, it.stage("measure") as st:
        log_datasets(it.client, st.run_id, [(held_out, "evaluation")])
    assert len(calls) == 2
    assert tracking.client().get_run(st.run_id).inputs.dataset_inputs[0].dataset.digest == held_out.digest
