"""A folder output written whole or not at all: the command writes into a hidden temporary folder beside the
output, and only a finished folder is renamed into place. A run killed part-way leaves the previous output as it
was (and a hidden `.NAME.partial-PID` folder, removed by the next run), never new files beside an old manifest.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from pipeline.outputs.atomic import writing

_KEPT = "the previous folder, if any, is left as it was"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep(parent: Path, name: str) -> None:
    """Remove what killed runs left: `.NAME.partial-PID` and `.NAME.old-PID` folders of processes gone."""
    for leftover in parent.glob(f".{name}.*-*"):
        kind, _, pid = leftover.name.removeprefix(f".{name}.").partition("-")
        if kind in ("partial", "old") and pid.isdigit() and not _alive(int(pid)) and leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)


@contextlib.contextmanager
def staged_folder(out: Path | str) -> Iterator[Path]:
    """Yield a fresh empty folder to write the output into; on a clean exit it replaces `out` (renames: the old
    folder moves aside, the new one into place, the old one is removed). On an error nothing changes at `out`; an
    OSError (a full disk) becomes a WriteError naming `out`."""
    out = Path(out)
    parent = out.parent
    with writing(out, _KEPT):
        parent.mkdir(parents=True, exist_ok=True)
        _sweep(parent, out.name)
        tmp = parent / f".{out.name}.partial-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
    try:
        with writing(out, _KEPT):  # an OSError writing the folder (a full disk) is named, in one line
            yield tmp
            _fsync_tree(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    with writing(out, _KEPT):
        old = parent / f".{out.name}.old-{os.getpid()}"
        if out.exists():
            out.rename(old)
        tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def _fsync_tree(folder: Path) -> None:
    """Flush every file written so that the rename never publishes a folder whose contents are not on disk."""
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
