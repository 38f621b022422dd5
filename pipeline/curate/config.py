"""`CurateConfig`: one curation run's settings, which are also params.yaml's `curate` section.

`agentloop curate` parses its options into it; the curate stage takes the section as it is and fills in the run's
inputs (`LOOP_INPUTS`) from the loop's outputs and the other sections. Defaults are the committed params.yaml's,
but for the executor: a library call or the command probes in this process, the loop's section
(`loop_curate_config`) on Ray workers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.curate.bands import Bands
from pipeline.rollout import Limits

LOOP_INPUTS = {
    "pool": "synthesize's trajectories",
    "tasks": "synthesize's tasks",
    "world": "the iteration's training world",
    "domain": "world.domain",
    "agent": "the baseline's checkpoint",
    "limits": "gate.limits",
    "ray_address": "measure.ray_address",
    "concurrency": "measure.concurrency",
    "held_out": "the held-out tasks (measure's)",
}
"""The fields the curate stage sets from elsewhere (params.yaml's `curate` section may not): where each comes from."""


class CurateConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pool: list[Path] = Field(
        default_factory=list, description="Trajectory files or run directories (with trajectories.jsonl)."
    )
    tasks: Path | None = Field(default=None, description="tasks.jsonl holding every pooled trajectory's task.")
    world: str | None = Field(default=None, description="World reference the pool was produced in.")
    domain: str | None = Field(
        default=None, description="Domain name or module:attribute (None: found from the world reference)."
    )
    held_out: Path | None = Field(
        default=None,
        description="Held-out tasks.jsonl: no pooled task or trajectory may be about one of its customers, or about"
        " an evaluation customer of a world whose customers are split (`pipeline.authoring.heldout`).",
    )
    agent: str | None = Field(default=None, description="The current agent (spec) to probe.")
    probes: int = Field(
        default=1,
        ge=1,
        description="Probe episodes of the current agent per pooled task (one: a failed task's posterior peaks in"
        " the target band, a passed one's in the anchor band).",
    )
    seed: int = Field(
        default=0, description="Probe seed; each probe's derives from it and the task, as measure's trials."
    )
    bands: Bands = Field(default_factory=Bands)
    anchor_ratio: float = Field(default=0.3, ge=0.0, le=1.0, description="Share of anchors in the selection.")
    max_items: int | None = Field(default=40, ge=1, description="Cap on selected tasks (null: no cap).")
    limits: Limits = Field(default_factory=Limits)
    executor: Literal["serial", "ray"] = Field(default="serial", description="Where probe episodes run.")
    concurrency: int = Field(
        default=16, ge=1, description="Probe episodes in flight per worker (as measure.concurrency)."
    )
    workers: int | None = Field(
        default=None, ge=1, description="Ray worker actors (None: one per CPU of the cluster, all its nodes)."
    )
    ray_address: str | None = Field(
        default=None, description="Ray cluster to connect to (as measure's; None: $RAY_ADDRESS, else local Ray)."
    )

    def missing(self) -> list[str]:
        """The inputs a run needs that this config leaves unset."""
        return [name for name in ("pool", "tasks", "world", "agent") if not getattr(self, name)]


def loop_curate_config() -> CurateConfig:
    """The loop's curation, as the committed params.yaml sets it: probes on Ray workers."""
    return CurateConfig(executor="ray")
