"""τ²-bench on the command line: `agentloop tasks import-tau2` (its tasks) and `agentloop import tau2-run`
(its results files, as our runs)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

import_app = typer.Typer(help="Import runs made elsewhere: τ²-bench results files.", no_args_is_help=True)
console = Console(stderr=True)


def _check_out(out: Path, **kwargs) -> None:
    """Refuse, before any work, an output that is an input or cannot be written (`pipeline.outputs`)."""
    from pipeline.outputs import OutputError, check_output

    try:
        check_output(out, "--out", **kwargs)
    except OutputError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None


@import_app.command("tau2-run")
def tau2_run(
    results: Path = typer.Argument(..., help="The JSON file `tau2 run` saved (info, tasks, simulations)."),
    domain: Path = typer.Option(
        ..., help="The τ²-bench domain directory the run used (db.json, tasks.json, policy.md)."
    ),
    out: Path = typer.Option(..., help="Run directory to write, e.g. runs/NAME."),
    verdict: str = typer.Option("strict", help="Verdict metrics.json counts passes by: strict or tau2."),
    upstream_tools: bool = typer.Option(
        False,
        help="Replay with τ²-bench's tool quirks for the τ²-compatible reward (the domain's tau2_quirks).",
    ),
) -> None:
    """Turn a τ²-bench results file into a run directory, re-graded with both verdicts, for gate and report."""
    from pipeline.grading.tau2_reward import VERDICTS, Tau2Config
    from pipeline.tau2.import_run import Tau2ImportError, import_run

    if verdict not in VERDICTS:
        console.print(f"[red]error:[/red] --verdict {escape(verdict)!r}: expected strict or tau2")
        raise typer.Exit(2)
    _check_out(out, folder=True, inputs={"RESULTS": results, "--domain": domain})
    try:
        record = import_run(results, domain, out, verdict=verdict, tau2=Tau2Config(upstream_tools=upstream_tools))  # type: ignore[arg-type]
    except Tau2ImportError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    console.print(
        f"{record['trials']} trials of {record['tasks']} tasks → {out}: strict {record['strict_passes']} pass,"
        f" τ² {record['tau2_passes']} pass, {record['disagreements']} disagree; τ²-compatible reward equals the"
        f" file's on {record['upstream_agreement']}/{record['upstream_rewards']}"
        f" ({record['seconds']:.1f} s; tasks for --tasks: {out / 'tasks.jsonl'})"
    )


def import_tau2_cmd(
    domain: Path = typer.Option(..., help="τ²-bench domain directory (db.json, tasks.json, policy.md)."),
    out: Path = typer.Option(..., help="Output tasks.jsonl."),
    split: str = typer.Option(None, help="A split of split_tasks.json (train, test, base); default: every task."),
    kind: str = typer.Option(
        None, "--kind", help="Domain name or module:attribute (default: the domain whose tables db.json holds)."
    ),
) -> None:
    """Convert τ²-bench tasks, keeping the user scenario, the gold actions with their requestor,
    communicate_info, NL assertions, reward basis and initial state; end states come from replaying gold."""
    from pipeline.tau2.importer import write_import
    from pipeline.world.domain import DomainCapabilityError
    from pipeline.world.tables import WorldLoadError

    _check_out(out, inputs={"--domain": domain})
    try:
        imported = write_import(domain, out, split, kind)
    except (WorldLoadError, DomainCapabilityError, ValueError, FileNotFoundError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    part = f" (split {split})" if split else ""
    refused = f"; {len(imported.refused)} with gold writes our tools refuse" if imported.refused else ""
    console.print(f"{len(imported.tasks)} τ²-bench tasks{part} of {imported.world.name} → {out}{refused}")
