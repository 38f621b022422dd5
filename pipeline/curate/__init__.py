"""Curation: replay-verify a pool of trajectories, band tasks by probing the current agent, mix and select."""

from pipeline.curate.bands import DEFAULT_EDGES, Bands, betainc
from pipeline.curate.config import LOOP_INPUTS, CurateConfig, loop_curate_config
from pipeline.curate.curate import curate
from pipeline.curate.pool import PoolItem, Rejection, read_pool
from pipeline.curate.select import Probed, mix, task_key, trajectory_key
from pipeline.curate.verify import Verified, replay_verify

__all__ = [
    "Bands",
    "CurateConfig",
    "DEFAULT_EDGES",
    "LOOP_INPUTS",
    "PoolItem",
    "Probed",
    "Rejection",
    "Verified",
    "betainc",
    "curate",
    "loop_curate_config",
    "mix",
    "read_pool",
    "replay_verify",
    "task_key",
    "trajectory_key",
]
