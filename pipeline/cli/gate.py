"""`agentloop gate`: promote or block a candidate against the champion on the held-out tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from pipeline.cli.console import console, stdout
from pipeline.cli.options import config_options


@config_options(
    "pipeline.gate:GateConfig",
    fields=("k", "margin", "confidence", "resamples", "seed", "alpha", "power", "min_effect", "verdict"),
)
def gate_cmd(
    *,
    candidate: Path = typer.Option(..., help="Candidate measure run directory (its trajectories.jsonl is re-graded)."),
    champion: Path = typer.Option(
        None,
        help="Champion measure run directory; omit on the first iteration (then: promote iff the candidate's "
        "pass^k lower bound exceeds the margin).",
    ),
    tasks: Path = typer.Option(..., help="The frozen held-out tasks.jsonl both runs were measured on."),
    world: str = typer.Option(..., help="World reference the runs used: gen-<seed>[-PxUxO] or a domain directory."),
    settings: dict[str, Any],
    out: Path = typer.Option(Path("gate.json"), help="Where to write the decision."),
    check: bool = typer.Option(
        False, "--check", help="Exit 0 when promoted, 1 when blocked, 3 when inconclusive (for CI)."
    ),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from --world)."),
) -> None:
    """Promote or block: paired bootstrap of the pass^k gain over held-out tasks, Holm tests for regressions."""
    from pipeline.gate import OUTCOME_WORD, GateConfig, decide, decision_table, write_gate
    from pipeline.outputs import check_output
    from pipeline.world import load_world

    check_output(
        out, "--out", inputs={"--candidate": candidate, "--champion": champion, "--tasks": tasks, "--world": world}
    )
    config = GateConfig.model_validate(settings)
    decision = decide(candidate, champion, tasks, load_world(world, domain), config)
    write_gate(decision, out)
    stdout().print(decision_table(decision))
    console.print(f"gate: {OUTCOME_WORD[decision.outcome]} → {out}")
    if check and not decision.promote:
        raise typer.Exit(3 if decision.outcome == "inconclusive" else 1)
