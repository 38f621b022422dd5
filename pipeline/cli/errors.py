"""The one place the command line turns an error into a one-line message and exit code 2.

Every command runs inside `AgentloopGroup.invoke`: an `AgentloopError` (bad input, a world's or a task's refusal,
an unreachable endpoint, a refused promotion...), a pydantic `ValidationError` (each field and what is wrong with
it), a `FileNotFoundError`, or an `IsADirectoryError` / `NotADirectoryError` / `PermissionError` naming its path
becomes `error: MESSAGE` on stderr and exit code 2. Anything else is a bug and keeps
its traceback: a library call that can fail on bad input raises an `AgentloopError` naming the file, field or option
(converting a third-party library's own error where it calls it), so no command catches builtin errors itself.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import typer
from rich.markup import escape
from typer.core import TyperGroup

from pipeline.cli.console import console
from pipeline.errors import AgentloopError

EXIT_BAD_INPUT = 2


def fail(message: str) -> NoReturn:
    """Print `error: MESSAGE` on stderr and exit 2."""
    console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def invalid(exc: Any) -> str:
    """A pydantic ValidationError in one line: each field and what is wrong with it."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors())


def message(exc: BaseException) -> str | None:
    """The one-line message of an error the user can act on; None for anything else (a bug)."""
    pydantic = sys.modules.get("pydantic")  # never imported here: no ValidationError can exist without it
    if pydantic is not None and isinstance(exc, pydantic.ValidationError):
        return invalid(exc)
    if isinstance(exc, (AgentloopError, FileNotFoundError)):
        return str(exc)
    if isinstance(exc, IsADirectoryError | NotADirectoryError | PermissionError) and exc.filename is not None:
        # a path given where a file is expected that is a folder (or lies under a file), or cannot be read
        what = {IsADirectoryError: "is a folder, not a file", NotADirectoryError: "lies under a file, not a folder"}
        return f"{exc.filename}: {what.get(type(exc), exc.strerror or 'permission denied')}"
    return None


class AgentloopGroup(TyperGroup):
    """The root command group: runs the chosen command, and turns the errors above into one line and exit 2."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            text = message(exc)
            if text is None:
                raise
            fail(text)
