"""Safe outputs, for every command: checked before any work (never an input, writable, the right kind), a file or
a folder written whole or not at all, a run folder locked while it is written, and one typed error (`WriteError`)
for an output the system refuses to write (a full disk)."""

from pipeline.outputs.atomic import WriteError, atomic_file, atomic_write, write_error, writing
from pipeline.outputs.check import OutputError, check_output
from pipeline.outputs.lock import FolderBusyError, folder_lock
from pipeline.outputs.staged import staged_folder

__all__ = [
    "FolderBusyError",
    "OutputError",
    "WriteError",
    "atomic_file",
    "atomic_write",
    "check_output",
    "folder_lock",
    "staged_folder",
    "write_error",
    "writing",
]
