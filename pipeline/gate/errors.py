"""The gate's input error, so the CLI can tell bad inputs (exit 2) from a blocked promotion (exit 1)."""

from __future__ import annotations

from pipeline.errors import InputError


class GateInputError(InputError, ValueError):
    """Inputs the gate cannot decide on; the message names the run, file or tasks at fault."""
