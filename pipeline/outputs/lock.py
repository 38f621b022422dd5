"""A run folder locked while a command writes it: a second writer is refused at once, not mixed in.

The lock is `flock` on the folder itself (no lock file lands among the outputs); the kernel drops it when the
process ends, however it ends, so a killed run never leaves a stale lock behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from pipeline.errors import InputError


class FolderBusyError(InputError, RuntimeError):
    """Another process is writing the folder."""


@contextlib.contextmanager
def folder_lock(folder: Path | str, what: str = "run") -> Iterator[Path]:
    """Hold an exclusive lock on `folder` (created if missing) for the block; FolderBusyError when it is held."""
    path = Path(folder)
    created = not path.exists()
    path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderBusyError(
                f"{path} is being written by another {what} right now; wait for it to finish or choose another folder"
            ) from None
        try:
            yield path
        except BaseException:
            if created:  # a run refused before it wrote anything leaves no empty folder where --out pointed
                with contextlib.suppress(OSError):
                    path.rmdir()
            raise
    finally:
        os.close(fd)
