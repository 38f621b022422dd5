"""`agentloop report`: one self-contained HTML report of a baseline and a candidate run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from pipeline.cli.console import console
from pipeline.cli.errors import fail


def report_cmd(
    baseline: Path = typer.Option(..., help="Baseline measure run directory."),
    candidate: Path = typer.Option(..., help="Candidate measure run directory."),
    tasks: Path = typer.Option(..., help="The tasks.jsonl both runs were measured on."),
    world: str = typer.Option(..., help="World reference the runs used (shown in the report)."),
    gate: Path = typer.Option(None, help="gate.json with the promotion decision, if any."),
    extra: list[Path] = typer.Option(None, help="More measure run directories for the cost / pass^k frontier."),
    out: Path = typer.Option(Path("report.html"), help="Output HTML file; plots go to plots/ beside it."),
    verdict: str = typer.Option("strict", help="Which verdict counts a pass: strict or tau2."),
) -> None:
    """Write one self-contained HTML report: pass^k, failure modes, cost frontier, gate, flipped trajectories."""
    from pipeline.grading import VERDICTS

    if verdict not in VERDICTS:
        fail(f"--verdict {verdict!r}: expected {' or '.join(VERDICTS)}")
    from pipeline.outputs import check_output
    from pipeline.report import build_report

    given: dict[str, Any] = {
        "--baseline": baseline,
        "--candidate": candidate,
        "--tasks": tasks,
        "--gate": gate,
        "--extra": extra,
    }
    check_output(out, "--out", inputs=given)
    path = build_report(
        baseline, candidate, tasks, world, gate_json=gate, out=out, extra_agents=extra or None, verdict=verdict
    )
    console.print(f"report → {path} (plots in {path.parent / 'plots'})")
