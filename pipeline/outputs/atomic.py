"""A file output written whole or not at all, and the one typed error for an output that cannot be written.

`atomic_write(path, text)` (or `with atomic_file(path) as fh:` for a writer that streams) writes a hidden
temporary file beside `path` (`.NAME.tmp-PID-N`), flushes and fsyncs it, and renames it over `path`. On any error
the temporary file is removed and `path` is left as it was (the previous file, or none); an OSError (a full disk,
a read-only folder, a quota) becomes a `WriteError` naming the path and the system's reason, so the command stops
in one line. A temporary file a killed process left is removed by the next write of the same path.

Appending journals (a run's trial journal) are not replaced whole; they wrap their appends in
`writing(path, ...)`, which gives the same typed error.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

from pipeline.outputs.check import OutputError

_counter = itertools.count()
_KEPT = "the previous file, if any, is left as it was"


class WriteError(OutputError):
    """An output that could not be written (a full disk, a read-only folder): the message names the path and the
    system's reason; the previous file, if any, is left as it was."""


def write_error(path: Path | str, exc: OSError, note: str = _KEPT) -> WriteError:
    """The typed one-line error for an OSError raised while writing `path`."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return WriteError(f"{path} could not be written: {reason}; {note}")


@contextlib.contextmanager
def writing(path: Path | str, note: str) -> Iterator[None]:
    """Turn an OSError raised in the block (writing `path`) into a WriteError; `note` says what is left behind."""
    try:
        yield
    except OSError as exc:
        raise write_error(path, exc, note) from exc


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep(path: Path) -> None:
    """Remove temporary files of `path` that processes now gone left (a kill between the write and the rename)."""
    with contextlib.suppress(OSError):
        for leftover in path.parent.glob(f".{path.name}.tmp-*-*"):
            pid = leftover.name.removeprefix(f".{path.name}.tmp-").partition("-")[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                leftover.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_file(
    path: Path | str, mode: Literal["w", "wb"] = "w", *, encoding: str = "utf-8", newline: str | None = None
) -> Iterator[IO[Any]]:
    """Yield a file handle (text for mode "w", bytes for "wb") whose contents replace `path` at a clean exit; an
    OSError in the block (its writes) or after it becomes a WriteError, and the temporary file is removed."""
    path = Path(path)
    with writing(path, _KEPT):
        path.parent.mkdir(parents=True, exist_ok=True)
        _sweep(path)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{next(_counter)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as for a plain open
    try:
        with writing(path, _KEPT):
            try:
                fh = os.fdopen(fd, "wb") if mode == "wb" else os.fdopen(fd, "w", encoding=encoding, newline=newline)
            except BaseException:
                os.close(fd)
                raise
            with fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)


def atomic_write(path: Path | str, data: str | bytes, *, encoding: str = "utf-8") -> None:
    """Replace `path` with `data` (text, written as `encoding` with no newline translation, or bytes) all at once:
    a reader never sees half a file, and a failed write leaves the previous file as it was (WriteError)."""
    blob = data if isinstance(data, bytes) else data.encode(encoding)
    with atomic_file(path, "wb") as fh:
        fh.write(blob)


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable; a file system that cannot fsync a folder is left to its own guarantees."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
