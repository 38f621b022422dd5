"""`agentloop serve`: a local model behind an OpenAI-compatible chat-completions API with tool calls.

`--model` is a checkpoint directory, or a registered model: `models:/NAME@ALIAS` (the version the alias points
at, followed when it moves) or `models:/NAME/VERSION` (that version, fixed). A registered version's files are
downloaded through MLflow (MLFLOW_TRACKING_URI, digest checked) into a temporary folder per version, removed
once another version has replaced it (and all of them at exit).
"""

from __future__ import annotations

import atexit
import re
import shutil
import tempfile
from pathlib import Path

import typer

from pipeline.cli.console import console
from pipeline.cli.errors import fail
from pipeline.errors import InputError

REGISTRY_PREFIX = "models:/"
_REGISTERED = re.compile(r"^models:/(?P<name>[^/@]+)(?:@(?P<alias>[A-Za-z0-9_-]+)|/(?P<version>[1-9][0-9]*))$")


def parse_registered(model: str) -> tuple[str, str | None, str | None]:
    """(name, alias, version) of `models:/NAME@ALIAS` or `models:/NAME/VERSION`; InputError naming --model else."""
    m = _REGISTERED.match(model)
    if not m:
        raise InputError(f"--model {model}: expected models:/NAME@ALIAS or models:/NAME/VERSION, or a directory")
    return m["name"], m["alias"], m["version"]


def serve_cmd(
    model: str = typer.Option(
        ...,
        help="Checkpoint directory (an agentloop checkpoint or any transformers model), or a registered model:"
        " models:/NAME@ALIAS (followed when the alias moves) or models:/NAME/VERSION.",
    ),
    name: str = typer.Option(
        None, help="Model name clients must send (default: the directory's name, or the registered model's)."
    ),
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
    poll_interval: float = typer.Option(
        10.0,
        min=0.01,
        help="With models:/NAME@ALIAS: seconds between looks at the alias; when it moves, the new version is loaded"
        " beside the old and swapped in (requests in flight finish on the old one).",
    ),
) -> None:
    """Serve a local model over an OpenAI-compatible chat-completions API with tool calls."""
    from pipeline.serve import load_engine, serve

    if api_key is not None and not api_key.strip():
        fail("--api-key (or AGENTLOOP_SERVE_API_KEY) is empty: give a key, or leave it unset to serve without one")
    if model.startswith(REGISTRY_PREFIX):
        engine = _registered_engine(model, name, poll_interval, device=device, dtype=dtype, chat_format=chat_format)
    else:
        engine = load_engine(Path(model), name, device=device, dtype=dtype, chat_format=chat_format)
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


def model_dir(files: Path, where: str) -> Path:
    """The checkpoint inside a registered version's files: the files themselves, or the `checkpoint/` folder a
    registered agent reference (agent.json) sits beside."""
    for candidate in (files, files / "checkpoint"):
        if (candidate / "config.json").is_file():
            return candidate
    raise InputError(f"{where}: its files hold no checkpoint (no config.json, nor checkpoint/config.json)")


def _registered_engine(model: str, name: str | None, poll_interval: float, **load_options):
    """A LiveEngine over the registered version `model` names; for an alias, an AliasWatcher follows it."""
    from pipeline.serve import AliasWatcher, LiveEngine, load_engine
    from pipeline.tracking import TrackingConfig, alias_version, check_reachable, fetch_version, tracking_errors

    registered, alias, fixed = parse_registered(model)
    config = TrackingConfig(model_name=registered)
    cache = Path(tempfile.mkdtemp(prefix="agentloop-serve-"))  # a folder per version, removed at exit
    atexit.register(shutil.rmtree, cache, ignore_errors=True)
    served = name or registered

    def resolve() -> str | None:
        with tracking_errors(config.tracking_uri):
            return alias_version(alias, config) if alias else fixed

    def load(version: str):
        where = f"models:/{registered}/{version}"
        with tracking_errors(config.tracking_uri):
            fetch_version(cache / version, version, config)
        engine = load_engine(model_dir(cache / version, where), served, **load_options)
        return engine, f"{registered}/{version}"

    check_reachable(config.tracking_uri)
    version = resolve()
    if version is None:
        raise InputError(f"--model {model}: {registered} has no alias {alias} in {config.tracking_uri}")
    engine, live_name = load(version)
    live = LiveEngine(served, engine, version, live_name)
    if alias:

        def forget(old, new) -> None:  # the old version's files: its weights are in memory (or mapped) already
            shutil.rmtree(cache / old.version, ignore_errors=True)

        AliasWatcher(live, resolve, load, interval_s=poll_interval, on_swap=forget).start()
        console.print(f"{served}: {live_name} (following {alias}, checked every {poll_interval:g} s)")
    return live
