"""What synthesis produces, however the tasks were made (grown from templates or selected from a pool)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.dataset import Task
from pipeline.rollout import Trajectory


@dataclass
class SynthesisResult:
    """Verified tasks, their gold trajectories, and the manifest that says how they were made."""

    tasks: list[Task] = field(default_factory=list)
    trajectories: list[Trajectory] = field(default_factory=list)
    manifest: dict = field(default_factory=dict)
