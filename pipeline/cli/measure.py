"""`agentloop measure`: k seeded trials per held-out task, graded from the world state, failures diagnosed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from pipeline.cli.console import console, stdout
from pipeline.cli.errors import fail
from pipeline.cli.options import config_options
from pipeline.progress import track


@config_options(
    "pipeline.measure:MeasureConfig",
    exclude=("limits", "prices"),
    names={"ray_address": ("--ray-address", "--address")},
    required=("world", "tasks"),
    help={"tasks": "Held-out tasks.jsonl."},
)
def measure_cmd(
    *,
    out: Path = typer.Option(
        ..., help="Run directory for trajectories.jsonl, verdicts.jsonl, per_task.csv, metrics.json."
    ),
    settings: dict[str, Any],
) -> None:
    """Measure an agent: k seeded trials per task, graded from the world state, failures diagnosed.

    Every finished trial is journaled in --out; run the same command again after a crash to resume."""
    from pipeline.dataset import read_tasks
    from pipeline.measure import RUN_FILES, MeasureConfig, measure
    from pipeline.outputs import check_output

    if settings["executor"] != "ray" and (settings["ray_address"] or settings["workers"]):
        fail("--ray-address and --workers need --executor ray")
    tasks, world = settings["tasks"], settings["world"]
    check_output(out, "--out", folder=True, inputs={"--tasks": tasks, "--world": world}, owned=RUN_FILES)
    config = MeasureConfig.model_validate(settings)
    n_tasks = len(read_tasks(tasks))
    if config.max_tasks:
        n_tasks = min(n_tasks, config.max_tasks)
    progress_bar = track(f"measure {config.agent}", n_tasks * config.trials, "trials", console=console)
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
    k_max = max(summary.pass_hat_k, key=int)
    for side, split in summary.by_expected.items():  # an agent that never acts passes every 'refuse' task
        if k_max not in split.pass_hat_k:
            table.add_row(f"pass^{k_max}, {side} tasks", "no such tasks" if not split.tasks else "—", "")
            continue
        lo, hi = split.intervals[f"pass_hat_{k_max}"]
        label = f"pass^{k_max}, {side} tasks ({split.tasks})"
        table.add_row(label, f"{split.pass_hat_k[k_max]:.1%}", f"{lo:.1%} – {hi:.1%}")
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
