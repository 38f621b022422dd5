"""Failure modes: why a failed trial failed, named from the trajectory and the world's own log.

The three modes the loop targets (plan adherence, invention, tool-output misread) plus the failure signature
and whether the failure "looked complete" from the transcript alone.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipeline.rollout.trajectory import Strict

FailureMode = Literal["plan_adherence", "invention", "misread"]
FAILURE_MODES: tuple[str, ...] = FailureMode.__args__  # type: ignore[attr-defined]
Signature = Literal[
    "tool_error_unrecovered", "empty_lookup_unrecovered", "policy_violation", "gave_up", "transferred"
]
SIGNATURES: tuple[str, ...] = Signature.__args__  # type: ignore[attr-defined]


class FailureAnalysis(Strict):
    """The diagnosis of one trial (empty for a passing trial)."""

    modes: list[FailureMode] = Field(default_factory=list, description="Every failure mode that applies.")
    dominant: FailureMode | None = Field(default=None, description="The one mode that best explains the failure.")
    evidence: dict[str, list[str]] = Field(default_factory=dict, description="Mode → what in the trial shows it.")
    signature: list[Signature] = Field(default_factory=list, description="How the failure shows on the surface.")
    looked_complete: bool = Field(
        default=False,
        description="Final message signals completion, at least one write happened, last tool result no error.",
    )
