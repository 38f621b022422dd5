"""The A/A check: the same agent measured twice must not be promoted over itself.

Two measure runs of one agent (different seeds) differ only by trial noise, so any "promote" the gate returns
on them is a false promotion. The check re-grades both runs once and applies the gate's rule both ways (A as
candidate against B, and B against A), since a noisy pair can favour either side; it fails if either way
promotes. Over many seeds the share of failing pairs estimates the gate's false-promotion rate
(bench/bench_gate_aa.py); one pair shows whether this evaluation, at its size, would fool the gate, and what
effect it could have seen (the MDE).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pydantic import Field

from pipeline.dataset import Expected
from pipeline.gate.config import GateConfig
from pipeline.gate.decision import read_heldout_tasks
from pipeline.gate.load import RunInputs, load_run, sha256_file
from pipeline.gate.power import Outcome
from pipeline.gate.split import SplitComparison
from pipeline.gate.stats import MetricTest, PassHatK, evaluate
from pipeline.outputs import atomic_write
from pipeline.strict import Strict
from pipeline.world import World, load_world

log = logging.getLogger(__name__)


class AADirection(Strict):
    """The gate's decision with one run as the candidate and the other as the champion."""

    candidate: str = Field(description="'A' or 'B'.")
    outcome: Outcome
    promote: bool
    reasons: list[str]
    pass_hat_k: PassHatK
    tests: list[MetricTest]
    by_expected: dict[Expected, SplitComparison] = Field(
        default_factory=dict, description="pass^k over the 'act' and the 'refuse' tasks apart (informational)."
    )


class AACheck(Strict):
    """aa.json: would the gate promote an agent over itself?"""

    false_promotion: bool = Field(description="True if either direction promoted: the gate was fooled by noise.")
    directions: list[AADirection] = Field(description="A over B, then B over A.")
    agents: dict[str, list[str]] = Field(description="Agent names found in each run's trajectories.")
    same_agent: bool = Field(
        description="Both runs name the same agents (a seeded agent carries its seed in its name, so this can be "
        "false for a genuine A/A pair; it is a hint, not a verdict)."
    )
    run_a: RunInputs
    run_b: RunInputs
    tasks_path: str
    tasks_sha256: str
    world: str
    n_tasks: int
    config: GateConfig


def aa_check(
    run_a: Path, run_b: Path, tasks_path: Path, world: World | str, config: GateConfig | None = None
) -> AACheck:
    """Re-grade both runs on the held-out tasks and gate each over the other; raises GateInputError on bad inputs."""
    config = config or GateConfig()
    if isinstance(world, str):
        world = load_world(world)
    tasks_path = Path(tasks_path)
    tasks = read_heldout_tasks(tasks_path)
    a = load_run("run A", Path(run_a), tasks, world, config.limits, config.require_all_tasks)
    b = load_run("run B", Path(run_b), tasks, world, config.limits, config.require_all_tasks)
    directions = []
    for name, cand, champ in (("A", a, b), ("B", b, a)):
        result = evaluate(cand.table, champ.table, config)
        directions.append(AADirection(candidate=name, **result.model_dump()))
    if a.agents != b.agents:
        log.warning("A/A check on runs of different agents: %s vs %s", a.agents, b.agents)
    return AACheck(
        false_promotion=any(d.promote for d in directions),
        directions=directions,
        agents={"A": a.agents, "B": b.agents},
        same_agent=a.agents == b.agents,
        run_a=a.inputs,
        run_b=b.inputs,
        tasks_path=str(tasks_path),
        tasks_sha256=sha256_file(tasks_path),
        world=world.name,
        n_tasks=len(a.table),
        config=config,
    )


def write_aa(check: AACheck, path: Path) -> Path:
    """Write aa.json (sorted keys)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(check.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    return path
