"""Real measure runs on a small generated world, shared by the gate tests.

The oracle is the strong agent; FlawedAgent with planted failure modes at high rates is the weak one. Runs are
made by the real measure pipeline (scripted agent ↔ scripted user ↔ tools, graded), so the gate re-grades
genuine trajectories.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import write_tasks
from pipeline.domains.retail.state import RetailWorld
from pipeline.measure import MeasureConfig, measure
from pipeline.world.registry import load_world

WORLD = "gen-3-12x40x100"
N_TASKS = 48
WEAK = "flawed:plan_adherence=0.5,invention=0.5,misread=0.5,seed=1"
WEAK_RESEEDED = "flawed:plan_adherence=0.5,invention=0.5,misread=0.5,seed=2"
INVENTS = "flawed:invention=0.9,seed=3"
MISREADS = "flawed:misread=0.3,seed=3"


@dataclass(frozen=True)
class Runs:
    world: RetailWorld
    tasks: Path
    oracle: Path
    weak: Path
    weak_reseeded: Path
    invents: Path
    misreads: Path
    oracle_first20: Path


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> Runs:
    root = tmp_path_factory.mktemp("gate_runs")
    world = load_world(WORLD)
    tasks = root / "tasks.jsonl"
    write_tasks(tasks, generate_tasks(world, N_TASKS, seed=0))

    def run(name: str, agent: str, **kw) -> Path:
        measure(MeasureConfig(world=WORLD, tasks=tasks, agent=agent, trials=4, resamples=100, **kw), root / name)
        return root / name

    return Runs(
        world=world,
        tasks=tasks,
        oracle=run("oracle", "oracle"),
        weak=run("weak", WEAK),
        weak_reseeded=run("weak_reseeded", WEAK_RESEEDED),
        invents=run("invents", INVENTS),
        misreads=run("misreads", MISREADS),
        oracle_first20=run("oracle_first20", "oracle", max_tasks=20),
    )
