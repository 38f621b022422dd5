"""Curation: replay-verify a pool of trajectories, band tasks by probing the current agent, mix and select."""

from pipeline.curate.bands import DEFAULT_EDGES, Bands, betainc
from pipeline.curate.config import CurateConfig
from pipeline.curate.curate import curate
from pipeline.curate.pool import PoolItem, Rejection, read_pool
from pipeline.curate.select import Probed, mix, task_key, trajectory_key
from pipeline.curate.verify import Verified, replay_verify

__all__ = [
    "DEFAULT_EDGES",
    "Bands",
    "CurateConfig",
    "Rejection",
    "PoolItem",
    "Probed",
    "Verified",
    "betainc",
    "curate",
    "mix",
    "read_pool",
    "replay_verify",
    "task_key",
    "trajectory_key",
]
