"""`agentloop gate-aa RUN_A RUN_B`: would the gate promote an agent over itself? (pipeline/gate/aa.py does the work.)

Exit codes: 0 when neither direction promotes, 1 with --check when one does (a false promotion), 2 on bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from pipeline.cli.console import console as err
from pipeline.cli.console import load_mapping, stdout, warn
from pipeline.cli.errors import fail, invalid


def _table(check) -> Table:
    from pipeline.gate import OUTCOME_WORD

    verdict = "[red]FALSE PROMOTION[/red]" if check.false_promotion else "[green]no false promotion[/green]"
    k = check.config.k
    table = Table(title=f"A/A gate check: {verdict} — {check.n_tasks} held-out tasks, pass^{k}")
    for col in ("candidate", f"pass^{k} diff", f"{check.config.confidence:.0%} interval", "MDE", "tasks to resolve"):
        table.add_column(col, justify="left" if col == "candidate" else "right")
    table.add_column("outcome")
    for d in check.directions:
        p = d.pass_hat_k
        other = "B" if d.candidate == "A" else "A"
        table.add_row(
            f"{d.candidate} over {other}",
            f"{p.diff:+.3f}",
            f"[{p.low:+.3f}, {p.high:+.3f}]",
            "— (se 0)" if p.mde is None else f"{p.mde:+.3f}",
            "—" if p.tasks_needed is None else str(p.tasks_needed),
            OUTCOME_WORD[d.outcome],
        )
    return table


def gate_aa_cmd(
    run_a: Path = typer.Argument(..., help="A measure run directory of the agent."),
    run_b: Path = typer.Argument(..., help="Another measure run of the same agent (another seed)."),
    tasks: Path = typer.Option(..., help="The held-out tasks.jsonl both runs were measured on."),
    world: str = typer.Option(..., help="World reference the runs used: gen-<seed>[-PxUxO] or a domain directory."),
    config: Path = typer.Option(None, help="GateConfig as JSON or YAML (default: the gate's defaults)."),
    out: Path = typer.Option(Path("aa.json"), help="Where to write the check."),
    check: bool = typer.Option(False, "--check", help="Exit 1 when the gate would falsely promote."),
) -> None:
    """A/A check: gate run A over run B and B over A; any promotion of an agent over itself is a false one."""
    from pydantic import ValidationError

    from pipeline.gate import GateConfig, aa_check, write_aa
    from pipeline.outputs import check_output
    from pipeline.world import load_world

    given: dict[str, Any] = {"RUN_A": run_a, "RUN_B": run_b, "--tasks": tasks, "--world": world, "--config": config}
    check_output(out, inputs=given)
    settings = load_mapping(config) if config is not None else {}  # not text, not YAML, not a mapping: one line
    try:
        gate_config = GateConfig.model_validate(settings)
    except ValidationError as exc:
        fail(f"{config}: {invalid(exc)}")
    result = aa_check(run_a, run_b, tasks, load_world(world), gate_config)
    write_aa(result, out)
    stdout().print(_table(result))
    if not result.same_agent:
        warn(f"the runs name different agents: {result.agents}")
    err.print(f"gate A/A: {'FALSE PROMOTION' if result.false_promotion else 'no false promotion'} → {out}")
    if check and result.false_promotion:
        raise typer.Exit(1)
