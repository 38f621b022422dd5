"""Report fixtures: two measure runs of scripted agents (flawed baseline, oracle candidate) and a real gate.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

WORLD = "gen-3-20x30x60"
FLAWED = "flawed:plan_adherence=0.3,invention=0.3,misread=0.3"


@dataclass
class Runs:
    tasks: Path
    baseline: Path  # the flawed agent
    candidate: Path  # the oracle
    gate: Path


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> Runs:
    from pipeline.authoring.templates import generate_tasks
    from pipeline.dataset.io import write_tasks
    from pipeline.gate import GateConfig, decide, write_gate
    from pipeline.measure import MeasureConfig, measure
    from pipeline.world.registry import load_world

    root = tmp_path_factory.mktemp("report_runs")
    world = load_world(WORLD)
    tasks = root / "tasks.jsonl"
    write_tasks(tasks, generate_tasks(world, 15, seed=1))
    for name, agent in (("baseline", FLAWED), ("candidate", "oracle")):
        measure(MeasureConfig(world=WORLD, tasks=tasks, agent=agent, trials=2, resamples=200), root / name)
    gate = write_gate(
        decide(root / "candidate", root / "baseline", tasks, world, GateConfig(k=2, resamples=200)), root / "gate.json"
    )
    return Runs(tasks=tasks, baseline=root / "baseline", candidate=root / "candidate", gate=gate)
