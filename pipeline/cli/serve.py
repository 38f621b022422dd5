"""`agentloop serve`: a local model behind an OpenAI-compatible chat-completions API with tool calls."""

from __future__ import annotations

from pathlib import Path

import typer

from pipeline.cli.console import console
from pipeline.cli.errors import fail


def serve_cmd(
    model: Path = typer.Option(..., help="Checkpoint directory: an agentloop checkpoint or any transformers model."),
    name: str = typer.Option(None, help="Model name clients must send (default: the directory's name)."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, min=1, max=65535),
    max_concurrency: int = typer.Option(1, min=1, help="Generations run at once (more queue)."),
    max_tokens: int = typer.Option(256, min=1, help="Reply length when a request sets none."),
    threads: int = typer.Option(1, min=0, help="Torch threads per generation (0: torch's default)."),
    api_key: str = typer.Option(
        None, envvar="AGENTLOOP_SERVE_API_KEY", help="Demand `Authorization: Bearer KEY` (default: no key)."
    ),
    max_request_bytes: int = typer.Option(1_000_000, min=1, help="Largest request body; more is refused (413)."),
    read_timeout: float = typer.Option(
        10.0, min=0.001, help="Seconds a request may take to arrive in full; slower ones get 408 and are closed."
    ),
    max_connections: int = typer.Option(128, min=1, help="Open connections at most; requests beyond get 503."),
    device: str = typer.Option(None, help="cpu, cuda, cuda:N, or auto (device_map over the GPUs)."),
    dtype: str = typer.Option("auto", help="auto (the checkpoint's own), float32, bfloat16 or float16."),
    chat_format: str = typer.Option(None, "--format", help="Chat format (default: recorded, or from the template)."),
) -> None:
    """Serve a local model over an OpenAI-compatible chat-completions API with tool calls."""
    from pipeline.serve import load_engine, serve

    if api_key is not None and not api_key.strip():
        fail("--api-key (or AGENTLOOP_SERVE_API_KEY) is empty: give a key, or leave it unset to serve without one")
    engine = load_engine(model, name, device=device, dtype=dtype, chat_format=chat_format)
    console.print(f"serving {engine.name} on http://{host}:{port}/v1 (context {engine.context} tokens)")
    serve(
        engine,
        host=host,
        port=port,
        max_concurrency=max_concurrency,
        default_max_tokens=max_tokens,
        threads=threads or None,
        api_key=api_key,
        max_request_bytes=max_request_bytes,
        read_timeout_s=read_timeout,
        max_connections=max_connections,
    )
