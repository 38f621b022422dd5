"""MLflow tracking of the loop: a parent run per iteration, nested stage runs, and the checkpoint registry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.lazy import lazy_exports
from pipeline.tracking.aliaslock import registry_lock
from pipeline.tracking.bounds import TrackingUnavailableError, check_reachable, tracking_errors
from pipeline.tracking.config import TrackingConfig, repo_root
from pipeline.tracking.datasets import dataset_tags, log_datasets
from pipeline.tracking.dvc import dvc_stage_hashes
from pipeline.tracking.headline import earlier_iterations, store_exists
from pipeline.tracking.registry import (
    CHALLENGER,
    CHAMPION,
    PRODUCTION,
    UNCHECKED,
    DeployError,
    PromotionOvertaken,
    PromotionRefused,
    RegistryError,
    alias_version,
    challenger_version,
    champion_checkpoint,
    champion_version,
    deploy,
    fetch_version,
    promote,
    register_checkpoint,
    resolve_version,
    rollback,
)
from pipeline.tracking.tracker import IterationTracker, RunLogger

if TYPE_CHECKING:
    from pipeline.tracking.traces import log_trial_traces

__all__ = [
    "CHALLENGER",
    "CHAMPION",
    "PRODUCTION",
    "UNCHECKED",
    "DeployError",
    "IterationTracker",
    "PromotionOvertaken",
    "PromotionRefused",
    "RegistryError",
    "RunLogger",
    "TrackingConfig",
    "TrackingUnavailableError",
    "alias_version",
    "challenger_version",
    "champion_checkpoint",
    "champion_version",
    "check_reachable",
    "dataset_tags",
    "deploy",
    "dvc_stage_hashes",
    "earlier_iterations",
    "fetch_version",
    "log_datasets",
    "log_trial_traces",
    "promote",
    "register_checkpoint",
    "registry_lock",
    "repo_root",
    "resolve_version",
    "rollback",
    "store_exists",
    "tracking_errors",
]

_LAZY = {"log_trial_traces": "pipeline.tracking.traces"}
"""Exports imported when first used: their modules need openai."""

__getattr__ = lazy_exports(__name__, _LAZY)
