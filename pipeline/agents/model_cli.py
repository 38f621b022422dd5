"""`agentloop model`: record how an outside checkpoint is prompted and read, before its first use."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

model_app = typer.Typer(help="Models: import an outside checkpoint, list chat formats.", no_args_is_help=True)
console = Console(stderr=True)


@model_app.command("import")
def import_cmd(
    path: Path = typer.Argument(..., help="A transformers causal LM directory (config, weights, tokenizer)."),
    chat_format: str = typer.Option(None, "--format", help="Chat format (default: read from the chat template)."),
    force: bool = typer.Option(False, help="Replace an existing agentloop.json."),
) -> None:
    """Write agentloop.json (chat format, architecture, dtype, template hash) next to the weights."""
    from pipeline.agents.loading import import_model

    try:
        meta = import_model(path, chat_format, force=force)
    except (FileNotFoundError, FileExistsError, OSError, ValueError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    typer.echo(f"{path}: format {meta.chat_format}, {meta.architecture}, {meta.dtype}")


@model_app.command("formats")
def formats_cmd() -> None:
    """The chat formats a checkpoint can be read in."""
    import pipeline.agents.formats as formats

    typer.echo(formats.__doc__.split("\n\n", 1)[1].rstrip())
