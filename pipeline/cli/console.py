"""The command line's one console: messages and progress on stderr, result tables on stdout."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from pipeline.errors import InputError

console = Console(stderr=True)
"""Messages, warnings and progress: stderr, so a command's stdout is only its result."""


def stdout() -> Console:
    """A console on the current stdout for result tables (made per use, so a redirected stdout is the one used)."""
    return Console()


def warn(message: str) -> None:
    console.print(f"[yellow]warning:[/yellow] {escape(message)}", soft_wrap=True)


def load_mapping(path: Path) -> dict:
    """A JSON or YAML file holding one mapping (a config section)."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:  # not YAML (JSON is YAML), or not text
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{path}: not JSON or YAML ({first})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping")
    return data
