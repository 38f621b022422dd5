"""The one error type the metrics raise, so callers (the CLI, the gate) can tell bad input from bugs."""

from __future__ import annotations


class MetricsInputError(ValueError):
    """Input a metric cannot be computed from; the message names the offending task, value or argument."""
