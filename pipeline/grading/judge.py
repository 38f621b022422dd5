"""The optional language-model judge: only for what no computer can check, and off by default.

A judge sees the task and the finished trajectory and returns one component. Implementations that call a
model live with the agent backends; this module only defines the slot.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pipeline.dataset import Task
from pipeline.grading.verdict import ComponentResult
from pipeline.rollout import Trajectory


@runtime_checkable
class Judge(Protocol):
    def judge(self, task: Task, trajectory: Trajectory) -> ComponentResult:
        """A component named 'judge'; raise InfrastructureError when the model cannot be reached."""
        ...


class NoJudge:
    """The default: no judge. The grader adds no component for it."""

    enabled = False

    def judge(self, task: Task, trajectory: Trajectory) -> ComponentResult:
        return ComponentResult(name="judge", passed=True, required=False, notes=["no judge configured"])


def is_enabled(judge: Judge | None) -> bool:
    return judge is not None and getattr(judge, "enabled", True)
