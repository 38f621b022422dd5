"""`decide`: should the candidate replace the champion? Recomputed from trajectories, written to gate.json.

The decision rule lives in `pipeline.gate.stats.evaluate`; this module supplies its inputs (re-graded
outcome tables of two measure runs on the frozen held-out tasks) and records what it decided on: the paths,
the sha256 of every file read, the task and trial counts and the configuration, so a gate.json can be
checked against the files it claims to judge.

Three outcomes (`outcome` in gate.json): "promote" (`promote` true), "block" and "inconclusive" (`promote`
false for both, so readers of `promote` never move the champion on an inconclusive gate). A gate.json written
before `outcome` existed reads back with the outcome its `promote` implied.

First iteration rule: with no champion (``champion_dir=None``) the candidate is promoted iff the lower bound
of its own pass^k (clustered bootstrap) exceeds the margin; there is nothing to have got worse against.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from pipeline.dataset import Expected, ProvenanceError, TaskFileError, check_provenance, read_tasks
from pipeline.gate.config import EVAL_TASKS, GateConfig
from pipeline.gate.errors import GateInputError
from pipeline.gate.load import RunInputs, load_run, sha256_file
from pipeline.gate.power import Outcome
from pipeline.gate.split import SplitComparison
from pipeline.gate.stats import MetricTest, PassHatK, evaluate
from pipeline.outputs import atomic_write
from pipeline.world import World, load_world

log = logging.getLogger(__name__)


class GateInputs(BaseModel):
    """What the decision was computed from."""

    model_config = ConfigDict(extra="forbid")

    candidate: RunInputs
    champion: RunInputs | None = Field(description="None on the first iteration (no champion yet).")
    tasks_path: str
    tasks_sha256: str = Field(description="sha256 of the held-out task file.")
    world: str = Field(description="Name of the world the trajectories were re-graded in.")
    world_fingerprint: str = Field(description="sha256 of the world's database.")
    n_tasks: int = Field(description="Tasks the decision is over.")
    config: GateConfig


class GateDecision(BaseModel):
    """gate.json: the decision, why, the interval it rests on, every test, and its inputs."""

    model_config = ConfigDict(extra="forbid")

    promote: bool = Field(description="True only for the outcome 'promote'.")
    outcome: Outcome = Field(
        description="promote, block (shown not better, or worse) or inconclusive (the gate could not have seen "
        "a gain of min_effect: measure on more tasks)."
    )
    reasons: list[str] = Field(description="One line per criterion, blocking reasons included.")
    pass_hat_k: PassHatK
    tests: list[MetricTest] = Field(description="Holm-corrected 'got worse' tests (empty without a champion).")
    by_expected: dict[Expected, SplitComparison] = Field(
        default_factory=dict,
        description="pass^k compared apart over the 'act' tasks (their gold changes the world) and the 'refuse'"
        " tasks (it changes nothing), each with its paired bootstrap interval: shown, not the promotion criterion."
        " Empty (and left out) in a gate.json written before the split existed.",
    )
    inputs: GateInputs

    @model_serializer(mode="wrap")
    def _omit_no_split(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if not self.by_expected:
            data.pop("by_expected", None)  # an older gate.json reads back to its own bytes
        return data

    @model_validator(mode="before")
    @classmethod
    def _outcome_of_older_files(cls, data: Any) -> Any:
        if isinstance(data, dict) and "outcome" not in data and isinstance(data.get("promote"), bool):
            return {**data, "outcome": "promote" if data["promote"] else "block"}
        return data

    @model_validator(mode="after")
    def _promote_iff_promote(self) -> GateDecision:
        if self.promote != (self.outcome == "promote"):
            raise ValueError(f"promote={self.promote} contradicts outcome={self.outcome!r}")
        return self


def read_heldout_tasks(path: Path) -> dict:
    """The held-out task file as id -> Task; a bad or empty file is a GateInputError naming it."""
    try:
        tasks = read_tasks(path)
    except TaskFileError as exc:
        raise GateInputError(str(exc)) from None
    if not tasks:
        raise GateInputError(f"{path}: no tasks")
    return {t.id: t for t in tasks}


def decide(
    candidate_dir: Path,
    champion_dir: Path | None,
    tasks_path: Path,
    world: World | str,
    config: GateConfig | None = None,
) -> GateDecision:
    """Re-grade both runs on the held-out tasks and apply the gate's rule; raises GateInputError on bad inputs.

    ``world`` is a loaded world or a reference for `load_world` (gen-<seed>[-PxUxO] or a domain directory).
    """
    config = config or GateConfig()
    if isinstance(world, str):
        world = load_world(world)
    tasks_path = Path(tasks_path)
    tasks = read_heldout_tasks(tasks_path)
    for run_dir in (candidate_dir, champion_dir):
        if run_dir is not None:
            try:
                check_provenance(Path(run_dir), domain=world.domain.name)  # re-grading needs the domain
            except ProvenanceError as exc:
                raise GateInputError(str(exc)) from None
    how: dict[str, Any] = {"verdict": config.verdict, "tau2": config.tau2}
    cand = load_run("candidate", Path(candidate_dir), tasks, world, config.limits, config.require_all_tasks, **how)
    champ = (
        load_run("champion", Path(champion_dir), tasks, world, config.limits, config.require_all_tasks, **how)
        if champion_dir is not None
        else None
    )
    for run_dir in (candidate_dir, champion_dir):
        if run_dir is not None:
            try:
                check_provenance(Path(run_dir), world, tasks_path)
            except ProvenanceError as exc:
                raise GateInputError(str(exc)) from None
    if champion_dir is None:
        log.info("no champion: first-iteration rule (candidate pass^%d lower bound > margin)", config.k)
    result = evaluate(cand.table, champ.table if champ else None, config)
    if len(cand.table) < EVAL_TASKS:
        log.warning(
            "gating on %d tasks: below the %d at which the gate has 80%% power for a +10-point pass^%d gain",
            len(cand.table),
            EVAL_TASKS,
            config.k,
        )
    return GateDecision(
        promote=result.promote,
        outcome=result.outcome,
        reasons=result.reasons,
        pass_hat_k=result.pass_hat_k,
        tests=result.tests,
        by_expected=result.by_expected,
        inputs=GateInputs(
            candidate=cand.inputs,
            champion=champ.inputs if champ else None,
            tasks_path=str(tasks_path),
            tasks_sha256=sha256_file(tasks_path),
            world=world.name,
            world_fingerprint=world.fingerprint,
            n_tasks=len(cand.table),
            config=config,
        ),
    )


def write_gate(decision: GateDecision, path: Path) -> Path:
    """Write gate.json (sorted keys, stable bytes for the same decision)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(decision.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    return path


def read_gate(path: Path) -> GateDecision:
    """A gate.json back as a GateDecision (for the report and MLflow logging)."""
    return GateDecision.model_validate_json(Path(path).read_text())
