"""`agentloop measure`: agent × task set × k seeded trials → trajectories, verdicts, per-task table, metrics.

Outputs in the run directory:
    trajectories.jsonl   one Trajectory per (task, trial), in task-then-trial order
    verdicts.jsonl       the Verdict and failure analysis of each trajectory, same order
    per_task.csv         one row per task: n, passes, pass^k, bucket, dominant failure mode
    metrics.json         the MeasureSummary (byte-identical for the same seeds and scripted participants)
"""

from __future__ import annotations

import csv
import json
import logging
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from pipeline.agents.registry import make_agent
from pipeline.dataset.io import read_tasks
from pipeline.grading.failure_modes import analyze
from pipeline.metrics.buckets import bucket_of
from pipeline.metrics.cost import PriceTable
from pipeline.metrics.errors import MetricsInputError
from pipeline.metrics.passk import pass_hat_k
from pipeline.metrics.summary import MeasureSummary, TrialRecord, summarize
from pipeline.rollout.executor import SerialExecutor, TrialResult
from pipeline.rollout.runner import Limits
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world

log = logging.getLogger(__name__)


class MeasureConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    world: str = Field(description="World reference (gen-<seed>[-PxUxO] or a domain directory).")
    tasks: Path = Field(description="Held-out tasks.jsonl.")
    agent: str = Field(description="Agent spec: oracle, flawed[:mode=rate,...], hf:PATH.")
    trials: int = Field(default=4, ge=1, description="Trials per task (k for pass^k).")
    seed: int = Field(default=0, description="Run seed; each trial's seed derives from it, the task and the trial.")
    limits: Limits = Field(default_factory=Limits)
    resamples: int = Field(default=1000, ge=1, description="Bootstrap resamples for intervals.")
    prices: PriceTable | None = Field(default=None, description="Model prices; None = cost not priced (0).")
    max_tasks: int | None = Field(default=None, ge=1, description="Use only the first N tasks (quick runs).")


def _record(result: TrialResult, cost: float) -> TrialRecord:
    v = result.verdict
    passed = None if v.infra_error else v.passed
    analysis = analyze(result.task, result.trajectory, v) if passed is False else None
    return TrialRecord(
        task_id=result.task.id,
        trial=result.trial,
        template=result.task.provenance.template,
        passed=passed,
        failed_components=v.failed_components,
        diff_kinds=sorted({d.kind for d in v.diffs}),
        analysis=analysis,
        cost=cost,
    )


def measure(
    config: MeasureConfig, out_dir: Path, on_trial: Callable[[TrialRecord], None] | None = None
) -> MeasureSummary:
    tasks = read_tasks(config.tasks)
    if not tasks:
        raise MetricsInputError(f"{config.tasks}: empty task set")
    if config.max_tasks:
        tasks = tasks[: config.max_tasks]
    world = load_world(config.world)
    agent = make_agent(config.agent)
    price = config.prices.price(agent.name) if config.prices else None
    out_dir.mkdir(parents=True, exist_ok=True)
    records: list[TrialRecord] = []
    traj_tmp, verdict_tmp = out_dir / "trajectories.jsonl.tmp", out_dir / "verdicts.jsonl.tmp"
    with traj_tmp.open("w") as ft, verdict_tmp.open("w") as fv:
        for result in SerialExecutor().run(world, tasks, agent, ScriptedUser(), config.trials, config.seed,
                                           config.limits):
            cost = price.cost(result.trajectory.agent_usage) if price else 0.0
            record = _record(result, cost)
            records.append(record)
            ft.write(result.trajectory.model_dump_json() + "\n")
            fv.write(json.dumps({"verdict": result.verdict.model_dump(mode="json"),
                                 "analysis": record.analysis.model_dump(mode="json") if record.analysis else None},
                                sort_keys=True) + "\n")
            if on_trial:
                on_trial(record)
    traj_tmp.replace(out_dir / "trajectories.jsonl")
    verdict_tmp.replace(out_dir / "verdicts.jsonl")
    summary = summarize(records, agent=agent.name, max_k=config.trials, resamples=config.resamples, seed=config.seed)
    (out_dir / "metrics.json").write_text(json.dumps(summary.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    _write_per_task(out_dir / "per_task.csv", records, config.trials)
    return summary


def _write_per_task(path: Path, records: list[TrialRecord], k: int) -> None:
    by_task: dict[str, list[TrialRecord]] = defaultdict(list)
    for r in records:
        by_task[r.task_id].append(r)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["task_id", "template", "valid_trials", "passes", f"pass_hat_{k}", "bucket", "dominant_mode"])
        for task_id in sorted(by_task):
            rs = by_task[task_id]
            valid = [r for r in rs if r.passed is not None]
            c = sum(1 for r in valid if r.passed)
            modes = Counter(r.analysis.dominant for r in valid if r.analysis and r.analysis.dominant)
            w.writerow([
                task_id,
                rs[0].template or "",
                len(valid),
                c,
                f"{pass_hat_k(c, len(valid), k):.4f}" if len(valid) >= k else "",
                bucket_of(c, len(valid)) if valid else "",
                modes.most_common(1)[0][0] if modes else "",
            ])
