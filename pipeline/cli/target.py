"""`agentloop target`: split a synthesis budget across the failure modes that cost most."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from pipeline.cli.console import console, load_mapping, stdout


def target_cmd(
    metrics: Path = typer.Option(..., help="A measure run's metrics.json."),
    budget: int = typer.Option(..., min=0, help="Tasks to synthesize in all."),
    out: Path = typer.Option(..., help="Output targets.json."),
    config: Path = typer.Option(None, help="TargetConfig as JSON or YAML (weights, floor, rate, dials)."),
    verdicts: Path = typer.Option(None, help="The measure run's verdicts.jsonl: also record where each mode failed."),
    tasks: Path = typer.Option(None, help="The measured tasks.jsonl (with --verdicts)."),
    domain: str = typer.Option(
        None, help="The tasks' domain: retail, airline or module:attribute (default: the run's trajectories')."
    ),
) -> None:
    """Split a synthesis budget across failure modes (rate × weight, floor per mode), with difficulty dials;
    with --verdicts and --tasks, also the cells (template × dial × outcome) each mode failed in."""
    from pipeline.outputs import check_output
    from pipeline.target import TargetConfig, make_targets

    check_output(
        out, "--out", inputs={"--metrics": metrics, "--config": config, "--verdicts": verdicts, "--tasks": tasks}
    )
    cfg = TargetConfig.model_validate(load_mapping(config)) if config else TargetConfig()
    targets = make_targets(metrics, budget, cfg, verdicts, tasks, domain=domain)
    targets.write(out)
    table = Table(title=f"targets: {budget} tasks from {metrics}")
    for col in ("mode", "rate", "weight", "count", "dials"):
        table.add_column(col)
    for mode, t in targets.modes.items():
        dials = ", ".join(f"{d}={p:.2f}" for d, p in t.dials.items())
        cells = targets.cells.get(mode, {})
        top = ", ".join(f"{c} {w:.0%}" for c, w in list(cells.items())[:3])
        table.add_row(mode, f"{t.rate:.3f}", f"{t.weight:g}", str(t.count), dials + (f"; cells: {top}" if top else ""))
    stdout().print(table)
    console.print(f"wrote {out}")
