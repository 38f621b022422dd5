"""From a measure run directory to an outcome table, recomputed from its trajectories.

Nothing the run wrote about itself is trusted: metrics.json, verdicts.jsonl and per_task.csv are ignored;
every trajectory is re-graded against the frozen held-out tasks in the world (the grader replays its tool
calls, so an edited trajectory fails its consistency check) and failed trials are re-diagnosed. Each task's
expected outcome (act / refuse) is read from its gold, replayed in the same world.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.dataset import Task, expected_outcomes
from pipeline.gate.errors import GateInputError
from pipeline.gate.table import TaskOutcome
from pipeline.grading import Tau2Config, VerdictName, grade
from pipeline.rollout import Limits, Trajectory
from pipeline.world import World

log = logging.getLogger(__name__)
TRAJECTORIES = "trajectories.jsonl"
_MAX_NAMED = 5


class RunInputs(BaseModel):
    """What was read from one run directory."""

    model_config = ConfigDict(extra="forbid")

    dir: str = Field(description="The run directory.")
    trajectories_sha256: str = Field(description="sha256 of its trajectories.jsonl, the bytes re-graded.")
    trials: int = Field(description="Trajectories read.")
    valid_trials: int = Field(description="Trials with a verdict (infrastructure errors excluded).")
    infra_errors: int = Field(description="Trials lost to infrastructure errors, excluded.")
    passes: int = Field(description="Valid trials that passed on re-grading.")


@dataclass
class LoadedRun:
    inputs: RunInputs
    table: dict[str, TaskOutcome]
    agents: list[str] = field(default_factory=list)  # agent names in the trajectories, sorted


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_trajectories(run_dir: Path) -> tuple[list[Trajectory], str]:
    """Every trajectory of a run, validated, and the sha256 of the bytes read; errors name the file and line."""
    path = Path(run_dir) / TRAJECTORIES
    if not Path(run_dir).is_dir():
        raise GateInputError(f"{run_dir}: not a run directory")
    if not path.exists():
        raise GateInputError(f"{run_dir}: no {TRAJECTORIES} (is this an `agentloop measure` output directory?)")
    data = path.read_bytes()
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise GateInputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    out: list[Trajectory] = []
    seen: set[tuple[str, int]] = set()
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            traj = Trajectory.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "line"
            raise GateInputError(f"{path}:{lineno}: invalid trajectory at {where}: {first['msg']}") from None
        key = (traj.task_id, traj.trial)
        if key in seen:
            raise GateInputError(f"{path}:{lineno}: task {traj.task_id!r} trial {traj.trial} appears twice")
        seen.add(key)
        out.append(traj)
    if not out:
        raise GateInputError(f"{path}: no trajectories")
    return out, hashlib.sha256(data).hexdigest()


def _check_coverage(name: str, trajectories: list[Trajectory], tasks: dict[str, Task], require_all: bool) -> None:
    ids = {t.task_id for t in trajectories}
    unknown = sorted(ids - set(tasks))
    if unknown:
        raise GateInputError(
            f"{name}: {len(unknown)} task(s) not in the held-out task file: {unknown[:_MAX_NAMED]}"
            " (measured on another task set?)"
        )
    missing = sorted(set(tasks) - ids)
    if require_all and missing:
        raise GateInputError(
            f"{name}: {len(missing)} held-out task(s) were not measured: {missing[:_MAX_NAMED]}"
            " (measure on the full task file, or set require_all_tasks=false)"
        )


def load_run(
    name: str,
    run_dir: Path,
    tasks: dict[str, Task],
    world: World,
    limits: Limits,
    require_all: bool = True,
    verdict: VerdictName = "strict",
    tau2: Tau2Config | None = None,
) -> LoadedRun:
    """Re-grade every trajectory of ``run_dir``; infrastructure-error trials are counted and left out.

    A trial passes under ``verdict``: 'strict' (ours) or 'tau2' (the τ²-compatible reward)."""
    from pipeline.grading import analyze

    run_dir = Path(run_dir)
    trajectories, digest = read_trajectories(run_dir)
    other_worlds = sorted({t.world for t in trajectories} - {world.name})
    if other_worlds:
        raise GateInputError(f"{name}: trajectories ran in world(s) {other_worlds}, not {world.name!r}")
    _check_coverage(name, trajectories, tasks, require_all)
    passes: dict[str, int] = defaultdict(int)
    valid: dict[str, int] = defaultdict(int)
    modes: dict[str, Counter[str]] = defaultdict(Counter)
    saw_tools: dict[str, int] = defaultdict(int)
    infra = 0
    for traj in trajectories:
        task = tasks[traj.task_id]
        graded = grade(world, task, traj, limits=limits, tau2=tau2)
        if graded.infra_error:
            infra += 1
            continue
        valid[traj.task_id] += 1
        saw_tools[traj.task_id] += any(m.role == "tool" for m in traj.messages)
        if graded.outcome(verdict):
            passes[traj.task_id] += 1
        else:
            modes[traj.task_id].update(set(analyze(task, traj, graded).modes))
    ids = sorted({t.task_id for t in trajectories})
    expected = expected_outcomes(world, [tasks[t] for t in ids])  # act / refuse: the gold's, replayed here
    table = {
        t: TaskOutcome(
            template=tasks[t].provenance.template,
            n=valid[t],
            passes=passes[t],
            modes=dict(modes[t]),
            expected=expected[t],
            saw_tools=saw_tools[t],
        )
        for t in ids
    }
    inputs = RunInputs(
        dir=str(run_dir),
        trajectories_sha256=digest,
        trials=len(trajectories),
        valid_trials=sum(valid.values()),
        infra_errors=infra,
        passes=sum(passes.values()),
    )
    log.info("%s: %d trajectories re-graded (%d infrastructure errors)", name, len(trajectories), infra)
    return LoadedRun(inputs, table, sorted({t.agent for t in trajectories}))
