"""Targeting: turn a measurement's failure-mode rates into a synthesis budget per mode, with difficulty dials,
and its failed trials into the cells (template × dial × outcome) the synthesis aims at."""

from pipeline.target.cells import VerdictsReadError, failure_cells
from pipeline.target.config import DEFAULT_DIALS, TargetConfig
from pipeline.target.split import MetricsReadError, ModeTarget, Targets, make_targets, read_rates, split_budget

__all__ = [
    "DEFAULT_DIALS",
    "MetricsReadError",
    "ModeTarget",
    "TargetConfig",
    "Targets",
    "VerdictsReadError",
    "failure_cells",
    "make_targets",
    "read_rates",
    "split_budget",
]
