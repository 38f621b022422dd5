"""MLflow tracking of the loop: a parent run per iteration, nested stage runs, and the checkpoint registry."""

from pipeline.tracking.config import TrackingConfig
from pipeline.tracking.dvc import dvc_stage_hashes
from pipeline.tracking.registry import (
    CHALLENGER,
    CHAMPION,
    PromotionRefused,
    RegistryError,
    challenger_version,
    champion_checkpoint,
    champion_version,
    fetch_version,
    promote,
    register_checkpoint,
)
from pipeline.tracking.tracker import IterationTracker, RunLogger

__all__ = [
    "CHALLENGER",
    "CHAMPION",
    "IterationTracker",
    "PromotionRefused",
    "RegistryError",
    "RunLogger",
    "TrackingConfig",
    "challenger_version",
    "champion_checkpoint",
    "champion_version",
    "dvc_stage_hashes",
    "fetch_version",
    "promote",
    "register_checkpoint",
]
