"""`agentloop tasks import-tau2`: a τ²-bench domain's tasks (or one split) as a tasks.jsonl."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

console = Console(stderr=True)


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

    try:
        imported = write_import(domain, out, split, kind)
    except (WorldLoadError, DomainCapabilityError, ValueError, FileNotFoundError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    part = f" (split {split})" if split else ""
    refused = f"; {len(imported.refused)} with gold writes our tools refuse" if imported.refused else ""
    console.print(f"{len(imported.tasks)} τ²-bench tasks{part} of {imported.world.name} → {out}{refused}")
