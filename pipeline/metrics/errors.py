"""The one error type the metrics raise, so callers (the CLI, the gate) can tell bad input from bugs."""

from __future__ import annotations

from pipeline.errors import InputError


class MetricsInputError(InputError, ValueError):
    """Input a metric cannot be computed from; the message names the offending task, value or argument."""
