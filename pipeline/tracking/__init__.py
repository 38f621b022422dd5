"""MLflow tracking of the loop: a parent run per iteration, nested stage runs, and the checkpoint registry."""

from pipeline.tracking.config import TrackingConfig
from pipeline.tracking.dvc import dvc_stage_hashes
from pipeline.tracking.registry import (
    CHALLENGER,
    CHAMPION,
    PromotionRefused,
    challenger_version,
    champion_checkpoint,
    champion_version,
    promote,
    register_checkpoint,
)
from pipeline.tracking.tracker import IterationTracker, RunLogger

__all__ = [
    "CHALLENGER",
    "CHAMPION",
    "IterationTracker",
    "PromotionRefused",
    "RunLogger",
    "TrackingConfig",
    "challenger_version",
    "champion_checkpoint",
    "champion_version",
    "dvc_stage_hashes",
    "promote",
    "register_checkpoint",
]
