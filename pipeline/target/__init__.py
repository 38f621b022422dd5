"""Targeting: turn a measurement's failure-mode rates into a synthesis budget per mode, with difficulty dials."""

from pipeline.target.split import (
    DEFAULT_DIALS,
    MetricsReadError,
    ModeTarget,
    TargetConfig,
    Targets,
    make_targets,
    read_rates,
    split_budget,
)

__all__ = [
    "DEFAULT_DIALS",
    "MetricsReadError",
    "ModeTarget",
    "TargetConfig",
    "Targets",
    "make_targets",
    "read_rates",
    "split_budget",
]
