"""One check every command makes of what it will write, before it does any work.

`check_output(out, inputs={...})` refuses, with one line naming the option and the path:
- an output that is one of the command's inputs, or a folder output that holds one (writing it would destroy the
  input), or a file output that is an existing file inside an input folder (a run's trajectories, say);
- a file output that is a folder, a folder output that is a file, a path under a file;
- a path that cannot be written: the nearest existing folder refuses a new entry (read-only, no permission), or
  an existing output file cannot be opened for writing;
- a folder output that already holds files the command does not write (`owned`): replacing it whole would lose
  them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from pipeline.errors import InputError


class OutputError(InputError, ValueError):
    """An output the command must not or cannot write; the message names the option and the path."""


InputPaths = Path | str | Iterable[Path | str] | None


def _paths(value: InputPaths) -> list[Path]:
    if value is None:
        return []
    if isinstance(value, str | os.PathLike):
        return [Path(value)]
    return [Path(v) for v in value if v is not None]


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(child: Path, parent: Path) -> bool:
    return child != parent and parent in child.parents


def check_output(
    out: Path | str,
    option: str = "--out",
    *,
    folder: bool = False,
    inputs: Mapping[str, InputPaths] | None = None,
    owned: Iterable[str] | None = None,
) -> Path:
    """Refuse an output that collides with an input or cannot be written (see the module); returns `out`.

    `inputs` maps an option name to the path(s) it gave (a world reference that is not a path is ignored);
    `owned`: for a folder output, the entries it may already hold (None: any)."""
    out = Path(out)
    real = _real(out)
    for name, value in (inputs or {}).items():
        for given in _paths(value):
            if not given.exists():
                continue
            src = _real(given)
            if src == real:
                raise OutputError(f"{option} {out} is the {name} input; write the output somewhere else")
            if folder and _inside(src, real):
                raise OutputError(f"{option} {out} holds the {name} input {given}; write the output somewhere else")
            if not folder and src.is_dir() and _inside(real, src) and real.is_file():
                raise OutputError(
                    f"{option} {out} would overwrite a file of the {name} input {given}; write the output elsewhere"
                )
    _check_kind(out, option, folder)
    _check_writable(out, option, folder)
    if folder and owned is not None and out.is_dir():
        allowed = set(owned)
        other = sorted(p.name for p in out.iterdir() if p.name not in allowed and not p.name.startswith("."))
        if other:
            shown = ", ".join(other[:5]) + (f" and {len(other) - 5} more" if len(other) > 5 else "")
            raise OutputError(
                f"{option} {out} already holds files this command does not write ({shown}); choose a new or empty"
                " folder"
            )
    return out


def _check_kind(out: Path, option: str, folder: bool) -> None:
    if out.exists() and not (out.is_file() or out.is_dir()):
        # a device, pipe or socket: the staged write would replace the node itself (/dev/full with a file)
        raise OutputError(f"{option} {out} is not a regular file (a device, pipe or socket); give a file path")
    if out.exists():
        if folder and not out.is_dir():
            raise OutputError(f"{option} {out} is a file; give a folder")
        if not folder and out.is_dir():
            raise OutputError(f"{option} {out} is a folder; give a file path")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{option} {out}: {parent} is a file, not a folder")
            break


def _check_writable(out: Path, option: str, folder: bool) -> None:
    if out.is_file():
        try:
            with out.open("ab"):  # opens for writing without changing a byte
                pass
        except OSError as exc:
            raise OutputError(f"{option} {out} cannot be written: {exc.strerror or exc}") from None
    where = out if folder and out.is_dir() else next((p for p in out.parents if p.exists()), Path("."))
    try:
        probe = tempfile.mkdtemp(prefix=".agentloop-probe-", dir=where)
    except OSError as exc:
        raise OutputError(f"{option} {out} cannot be written: {where}: {exc.strerror or exc}") from None
    os.rmdir(probe)
