"""`agentloop measure`: k seeded trials per held-out task, graded from the world state, failures diagnosed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from pipeline.cli.console import console, stdout
from pipeline.cli.errors import fail
from pipeline.loop.progress import track


def measure_cmd(
    world: str = typer.Option(..., help="World reference: gen-<seed>[-PxUxO] or a domain directory."),
    tasks: Path = typer.Option(..., help="Held-out tasks.jsonl."),
    agent: str = typer.Option(
        "oracle", help="Agent spec: oracle, flawed[:mode=rate,...,seed=N], hf:PATH, openai:MODEL, vllm:PATH."
    ),
    trials: int = typer.Option(4, min=1, help="Trials per task."),
    k: int = typer.Option(None, min=1, help="Largest k for pass@k / pass^k (default: --trials)."),
    seed: int = typer.Option(0),
    out: Path = typer.Option(
        ..., help="Run directory for trajectories.jsonl, verdicts.jsonl, per_task.csv, metrics.json."
    ),
    max_tasks: int = typer.Option(None, min=1, help="Only the first N tasks."),
    user: str = typer.Option(
        "scripted",
        help="User simulator: scripted, llm:MODEL[,temperature=T], or tau2-llm:MODEL[@BASE_URL][,temperature=T]"
        " (τ²-bench's conventions: the task's scenario as written, ###STOP### / ###TRANSFER### / ###OUT-OF-SCOPE###).",
    ),
    judge: str = typer.Option(
        None, help="Optional judge (soft rubric items; reviews the user simulator on failed trials): llm:MODEL."
    ),
    executor: str = typer.Option("serial", help="serial, or ray (tasks × trials fanned out to Ray workers)."),
    ray_address: str = typer.Option(
        None,
        "--ray-address",
        "--address",
        help="With --executor ray: an existing cluster to connect to, HOST:PORT, ray://HOST:PORT or auto"
        " (default: $RAY_ADDRESS, else a local Ray instance).",
    ),
    workers: int = typer.Option(
        None, min=1, help="With --executor ray: worker actors (default: one per CPU of the cluster, all nodes)."
    ),
    retries: int = typer.Option(2, min=0, help="Reruns of a trial lost to an infrastructure error."),
    concurrency: int = typer.Option(16, min=1, help="Episodes in flight per worker (same verdicts)."),
    temperature: float = typer.Option(
        None, min=0, help="Sampling temperature of a checkpoint agent whose spec sets none (default: its backend's)."
    ),
    resamples: int = typer.Option(1000, min=1, help="Bootstrap resamples for the intervals."),
    verdict: str = typer.Option("strict", help="Verdict passes are counted by: strict or tau2."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: found from --world)."),
) -> None:
    """Measure an agent: k seeded trials per task, graded from the world state, failures diagnosed.

    Every finished trial is journaled in --out; run the same command again after a crash to resume."""
    from pipeline.dataset.io import read_tasks
    from pipeline.measure import MeasureConfig, measure
    from pipeline.measure.run import RUN_FILES
    from pipeline.outputs import check_output

    if executor != "ray" and (ray_address or workers):
        fail("--ray-address and --workers need --executor ray")
    check_output(out, "--out", folder=True, inputs={"--tasks": tasks, "--world": world}, owned=RUN_FILES)
    config = MeasureConfig(
        world=world,
        domain=domain,
        tasks=tasks,
        agent=agent,
        trials=trials,
        k=k,
        seed=seed,
        max_tasks=max_tasks,
        user=user,
        judge=judge,
        executor=executor,
        ray_address=ray_address,
        workers=workers,
        retries=retries,
        concurrency=concurrency,
        temperature=temperature,
        resamples=resamples,
        verdict=verdict,
    )
    n_tasks = len(read_tasks(tasks))
    if max_tasks:
        n_tasks = min(n_tasks, max_tasks)
    progress_bar = track(f"measure {agent}", n_tasks * trials, "trials", console=console)
    with progress_bar as progress:
        summary = measure(config, out, on_trial=lambda record: progress.advance(record.passed))
    stdout().print(summary_table(summary))
    console.print(escape(f"wrote {out}/metrics.json, per_task.csv, trajectories.jsonl, verdicts.jsonl"))


def summary_table(summary: Any) -> Table:
    table = Table(
        title=escape(f"{summary.agent}: {summary.tasks} tasks × {summary.trials_per_task} trials")
        + f" ({summary.infra_errors} infrastructure errors excluded)"
    )
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("95% interval", justify="right")
    for k, v in summary.pass_hat_k.items():
        lo, hi = summary.intervals[f"pass_hat_{k}"]
        table.add_row(f"pass^{k}", f"{v:.1%}", f"{lo:.1%} – {hi:.1%}")
    for k, v in summary.pass_at_k.items():
        if k != "1":
            table.add_row(f"pass@{k}", f"{v:.1%}", "")
    for bucket, share in summary.buckets.items():
        table.add_row(f"tasks {bucket}", f"{share:.1%}", "")
    for mode, rate in summary.failure_modes.items():
        table.add_row(f"{mode} (trials / tasks)", f"{rate.trials:.1%} / {rate.tasks:.1%}", "")
    table.add_row("failures that looked complete", f"{summary.looked_complete_share:.1%}", "")
    if summary.user_simulator_failures:
        table.add_row("failures due to the user simulator", f"{summary.user_simulator_failures:.1%}", "")
    cps = summary.cost.cost_per_success
    table.add_row("cost per success", "—" if cps is None else f"{cps:.4f} {summary.cost.currency}", "")
    return table
