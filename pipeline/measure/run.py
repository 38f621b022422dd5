"""`agentloop measure`: agent × task set × k seeded trials → trajectories, verdicts, per-task table, metrics.

Outputs in the run directory:
    trajectories.jsonl   one Trajectory per (task, trial), in task-then-trial order
    verdicts.jsonl       the Verdict and failure analysis of each trajectory, same order
    per_task.csv         one row per task: n, passes, pass^k, bucket, dominant failure mode
    metrics.json         the MeasureSummary (byte-identical for the same seeds and scripted participants)
    usage.json           tokens (and cost, where priced) of the agent, the user simulator and the judge, apart;
                         the agent's and the user simulator's settings (model, endpoint, sampling, the most
                         tokens a turn may generate) under agent.settings and user.settings
    timings.jsonl        the wall-clock figures of each trial (timings, agent compute seconds, message latencies)
                         and the Ray node that ran it (node id and IP; null with the serial executor)
    journal.jsonl        every finished trial, fsynced as it finishes: a killed run started again with the same
                         settings and directory resumes where it stopped (see pipeline.trials.resume)

Every file but the last two is byte-identical for the same seeds and participants: wall-clock figures live only
in `timings.jsonl` (and the journal), so a rerun that acts the same changes nothing DVC hashes downstream. A run
directory is locked while a measure writes it (`pipeline.outputs.folder_lock`): a second measure into the same
directory at the same time is refused, never mixed in.
"""

from __future__ import annotations

import csv
import json
import logging
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from pipeline.agents import make_agent
from pipeline.dataset import PROVENANCE_FILE, Expected, expected_outcomes, provenance_text, read_tasks
from pipeline.dataset.provenance import Provenance
from pipeline.grading import VerdictName, analyze, check_tasks
from pipeline.measure.config import MeasureConfig
from pipeline.metrics import (
    MeasureSummary,
    MetricsInputError,
    PriceTable,
    TrialRecord,
    bucket_of,
    pass_hat_k,
    summarize,
)
from pipeline.outputs import atomic_file, atomic_write, folder_lock
from pipeline.rollout import Usage
from pipeline.trials import SerialExecutor, TrialJournal, TrialResult
from pipeline.users import make_user
from pipeline.world import load_world

log = logging.getLogger(__name__)
RUN_FILES = (
    "trajectories.jsonl",
    "verdicts.jsonl",
    "per_task.csv",
    "metrics.json",
    "usage.json",
    "timings.jsonl",
    "journal.jsonl",
    PROVENANCE_FILE,
)


def trial_record(
    result: TrialResult, cost: float, verdict: VerdictName = "strict", expected: Expected | None = None
) -> TrialRecord:
    """A graded trial reduced to what the metrics need: its outcome under `verdict`, its failure analysis when it
    failed, its task's expected outcome (`pipeline.dataset.expected_outcome`) when given."""
    v, usage = result.verdict, result.trajectory.agent_usage
    passed = None if v.infra_error else v.outcome(verdict)
    analysis = analyze(result.task, result.trajectory, v) if passed is False else None
    return TrialRecord(
        task_id=result.task.id,
        trial=result.trial,
        template=result.task.provenance.template,
        expected=expected,
        passed=passed,
        failed_components=v.failed_components,
        diff_kinds=sorted({d.kind for d in v.diffs}),
        analysis=analysis,
        cost=cost,
        tokens=usage.prompt_tokens + usage.completion_tokens,
    )


def make_executor(config: MeasureConfig, judge=None):
    if config.executor == "ray":
        from pipeline.trials import RayExecutor

        return RayExecutor(
            address=config.ray_address,
            workers=config.workers,
            retries=config.retries,
            judge=judge,
            batch=config.concurrency,
        )
    return SerialExecutor(retries=config.retries, judge=judge, batch=config.concurrency)


def measure(
    config: MeasureConfig, out_dir: Path, on_trial: Callable[[TrialRecord], None] | None = None
) -> MeasureSummary:
    """Run (or resume, from `out_dir/journal.jsonl`) every (task, trial), then write the run's files; the
    directory is locked meanwhile (FolderBusyError when another measure holds it)."""
    with folder_lock(out_dir, "measure"):
        return _measure(config, out_dir, on_trial)


def _measure(
    config: MeasureConfig, out_dir: Path, on_trial: Callable[[TrialRecord], None] | None = None
) -> MeasureSummary:
    from pipeline.grading import judge_usage, make_judge

    tasks_file, world_ref = config.tasks, config.world
    if tasks_file is None or world_ref is None:
        missing = " and no ".join(name for name in ("world", "tasks") if getattr(config, name) is None)
        raise MetricsInputError(f"MeasureConfig: no {missing} given (a run needs both)")
    max_k = config.k or config.trials
    if max_k > config.trials:
        raise MetricsInputError(f"k={max_k} exceeds trials={config.trials}: pass^k needs at least k trials per task")
    tasks = read_tasks(tasks_file)
    if not tasks:
        raise MetricsInputError(f"{tasks_file}: empty task set")
    if config.max_tasks:
        tasks = tasks[: config.max_tasks]
    world = load_world(world_ref, config.domain)
    check_tasks(world, tasks, str(tasks_file))  # a task the world cannot run would be scored as a failure
    agent, user, judge = make_agent(config.agent_spec(), world.domain), make_user(config.user), make_judge(config.judge)
    price = config.prices.find(agent.name) if config.prices else None
    if config.prices and price is None:
        log.warning("no price for %s in the price table: its cost is left unpriced (tokens per success)", agent.name)
    out_dir.mkdir(parents=True, exist_ok=True)
    journal = TrialJournal(out_dir / "journal.jsonl", config.fingerprint(tasks))
    finished, _ = journal.load(tasks)
    if finished:
        log.info("resuming %s: %d trials already finished", out_dir, len(finished))

    expected = expected_outcomes(world, tasks)  # act or refuse: the split of pass^k in metrics.json

    def record_of(result: TrialResult) -> TrialRecord:
        cost = price.cost(result.trajectory.agent_usage) if price else 0.0
        return trial_record(result, cost, config.verdict, expected[result.task.id])

    if on_trial:
        for result in finished.values():
            on_trial(record_of(result))
    with journal:
        for result in make_executor(config, judge).run(
            world, tasks, agent, user, config.trials, config.seed, config.limits, skip=set(finished)
        ):
            journal.append(result)
            finished[(result.task.id, result.trial)] = result
            if on_trial:
                on_trial(record_of(result))
    results = [finished[(t.id, k)] for t in tasks for k in range(config.trials)]
    records = [record_of(r) for r in results]
    atomic_write(
        out_dir / "trajectories.jsonl",
        "".join(r.trajectory.without_timings().model_dump_json() + "\n" for r in results),
    )
    atomic_write(out_dir / PROVENANCE_FILE, provenance_text(Provenance.of(world, tasks_file, out_dir)))
    atomic_write(out_dir / "timings.jsonl", "".join(json.dumps(_timings(r)) + "\n" for r in results))
    atomic_write(
        out_dir / "verdicts.jsonl",
        "".join(
            json.dumps(
                {
                    "verdict": r.verdict.model_dump(mode="json"),
                    "analysis": rec.analysis.model_dump(mode="json") if rec.analysis else None,
                },
                sort_keys=True,
            )
            + "\n"
            for r, rec in zip(results, records, strict=True)
        ),
    )
    valid = Counter(r.task_id for r in records if r.passed is not None)
    if not any(valid[t.id] >= max_k for t in tasks):
        first = next(
            (r.trajectory.error or "; ".join(r.verdict.diagnostics) for r in results if r.verdict.infra_error), None
        )
        raise MetricsInputError(
            f"{out_dir}: no task has {max_k} valid trial(s); every task lost trials to infrastructure errors (the"
            f" trajectories and verdicts are written; first: {first}); run the same command again to retry them"
        )
    short = [t.id for t in tasks if valid[t.id] < max_k]
    if short:
        log.warning(
            "%d of %d tasks have fewer than %d valid trials (infrastructure errors): %s; each counts only at the k"
            " its valid trials reach (metrics.json: short_tasks), and running the same command again retries them",
            len(short), len(tasks), max_k, ", ".join(short[:5]) + (" …" if len(short) > 5 else ""),
        )  # fmt: skip
    summary = summarize(
        records,
        agent=agent.name,
        max_k=max_k,
        resamples=config.resamples,
        seed=config.seed,
        currency=config.prices.currency if config.prices else "USD",
        priced=price is not None,
    )
    atomic_write(out_dir / "metrics.json", json.dumps(summary.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    write_per_task(out_dir / "per_task.csv", records, max_k)
    usage = {
        "agent": (agent.name, sum((r.trajectory.agent_usage for r in results), Usage())),
        "user": (user.name, sum((r.trajectory.user_usage for r in results), Usage())),
        "judge": (judge.name if judge else None, sum((judge_usage(r.verdict) for r in results), Usage())),
    }
    report = _usage_report(usage, config.prices)
    report["user"]["settings"] = getattr(user, "settings", None) or {"spec": config.user}
    report["agent"]["settings"] = getattr(agent, "settings", None) or {"spec": config.agent_spec()}
    atomic_write(out_dir / "usage.json", json.dumps(report, indent=2, sort_keys=True) + "\n")
    return summary


def _usage_report(usage: dict[str, tuple[str | None, Usage]], prices: PriceTable | None) -> dict:
    """Tokens per participant, and their cost where the price table names the model.

    Compute seconds are wall-clock figures (they are in `timings.jsonl`); they enter only a cost priced per
    compute second, which is then as variable as the clock."""
    out = {}
    for role, (name, total) in usage.items():
        price = prices.find(name) if prices and name else None
        tokens = total.model_dump(exclude={"compute_s"})
        out[role] = {"name": name, **tokens, "cost": round(price.cost(total), 6) if price else None}
    return out


def _timings(result: TrialResult) -> dict:
    """One trial's wall-clock figures and the Ray node that ran it (null: the driver's process), apart from the
    trajectory so that the trajectory's bytes are the same wherever and however fast it ran."""
    traj = result.trajectory
    return {
        "task_id": traj.task_id,
        "trial": traj.trial,
        **traj.timings.model_dump(),
        "agent_compute_s": traj.agent_usage.compute_s,
        "user_compute_s": traj.user_usage.compute_s,
        "latency_s": [m.latency_s for m in traj.messages if m.role == "assistant"],
        "node": result.node,
        "node_ip": result.node_ip,
    }


def write_per_task(path: Path, records: list[TrialRecord], k: int) -> None:
    """`per_task.csv`: one row per task (its valid trials, passes, pass^k, bucket and dominant failure mode)."""
    by_task: dict[str, list[TrialRecord]] = defaultdict(list)
    for r in records:
        by_task[r.task_id].append(r)
    with atomic_file(path, newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["task_id", "template", "valid_trials", "passes", f"pass_hat_{k}", "bucket", "dominant_mode"])
        for task_id in sorted(by_task):
            rs = by_task[task_id]
            valid = [r for r in rs if r.passed is not None]
            c = sum(1 for r in valid if r.passed)
            modes = Counter(r.analysis.dominant for r in valid if r.analysis and r.analysis.dominant)
            w.writerow(
                [
                    task_id,
                    rs[0].template or "",
                    len(valid),
                    c,
                    f"{pass_hat_k(c, len(valid), k):.4f}" if len(valid) >= k else "",
                    bucket_of(c, len(valid)) if valid else "",
                    modes.most_common(1)[0][0] if modes else "",
                ]
            )
