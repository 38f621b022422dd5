"""Safe outputs, for every command: checked before any work (never an input, writable, the right kind), a folder
written whole or not at all, and a run folder locked while it is written."""

from pipeline.outputs.check import OutputError, check_output
from pipeline.outputs.lock import FolderBusyError, folder_lock
from pipeline.outputs.staged import staged_folder

__all__ = ["FolderBusyError", "OutputError", "check_output", "folder_lock", "staged_folder"]
