"""Every run records where it came from (domain, world digest, task-file digest), and gate and report refuse a
run measured on another world or on another version of the task file, through one shared check."""

from __future__ import annotations

import json

import pytest

from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import read_tasks, write_tasks
from pipeline.dataset.provenance import PROVENANCE_FILE, ProvenanceError, check_provenance, file_sha256
from pipeline.gate import GateConfig, GateInputError, decide
from pipeline.measure import MeasureConfig, measure
from pipeline.world.registry import load_world

WORLD = "gen-5-8x10x20"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("prov")
    write_tasks(root / "tasks.jsonl", generate_tasks(load_world(WORLD), 4, seed=3))
    config = MeasureConfig(world=WORLD, tasks=root / "tasks.jsonl", agent="oracle", trials=2, resamples=20)
    measure(config, root / "run")
    return root


def test_measure_records_its_provenance(run):
    record = json.loads((run / "run" / PROVENANCE_FILE).read_text())
    world = load_world(WORLD)
    assert record == {
        "domain": "retail",
        "world": world.name,
        "world_digest": world.fingerprint,
        "tasks_sha256": file_sha256(run / "tasks.jsonl"),
        "trajectories_sha256": file_sha256(run / "run" / "trajectories.jsonl"),
    }
    assert check_provenance(run / "run", world, run / "tasks.jsonl") is not None


def test_a_task_file_changed_since_is_refused_by_gate(run, tmp_path):
    tasks = read_tasks(run / "tasks.jsonl")
    changed = tmp_path / "tasks.jsonl"
    write_tasks(changed, [tasks[0].model_copy(update={"gold_actions": tasks[0].gold_actions[:-1]}), *tasks[1:]])
    with pytest.raises(GateInputError, match=r"measured with tasks_sha256 .*\(the task file changed since"):
        decide(run / "run", None, changed, WORLD)
    # the file it was measured on passes
    decide(run / "run", None, run / "tasks.jsonl", WORLD, GateConfig(k=2, resamples=200))


def test_another_world_is_refused(run):
    with pytest.raises(ProvenanceError, match="measured with world 'gen-5-8x10x20', given 'gen-6-8x10x20'"):
        check_provenance(run / "run", load_world("gen-6-8x10x20"), None)


def test_a_run_without_a_record_or_with_a_stale_one_is_accepted(run, tmp_path):
    assert check_provenance(tmp_path, load_world(WORLD), run / "tasks.jsonl") is None
    import shutil

    shutil.copytree(run / "run", stale := tmp_path / "stale")
    lines = (stale / "trajectories.jsonl").read_text().splitlines(keepends=True)
    (stale / "trajectories.jsonl").write_text("".join(lines[1:]))  # other trajectories, the old record beside them
    assert check_provenance(stale, load_world("gen-6-8x10x20"), None) is None
