"""The `target` section of params.yaml (and the options of `agentloop target`): how a synthesis budget is split
across the failure modes, and the default difficulty dials of each mode."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from pipeline.authoring import DIALS
from pipeline.grading import BY_NAME, LOOP_MODES
from pipeline.grading.modes import FAILURE_MODES
from pipeline.strict import Strict

__all__ = ["DEFAULT_DIALS", "TargetConfig"]

DEFAULT_DIALS: dict[str, dict[str, float]] = {m: dict(BY_NAME[m].dials) for m in LOOP_MODES}
"""Mode → dial → probability, the registry's, for the modes weighted by default (`LOOP_MODES`)."""


class TargetConfig(Strict):
    """How a budget is split and how hard the data for each mode is made."""

    weights: dict[str, Annotated[float, Field(ge=0, allow_inf_nan=False)]] = Field(
        default_factory=lambda: {m: BY_NAME[m].weight for m in LOOP_MODES},
        description="Mode → weight (finite, not negative); a mode left out or weighted 0 gets nothing.",
    )
    floor: int = Field(default=2, ge=0, description="Tasks each weighted mode gets at least (budget permitting).")
    rate: str = Field(default="trials", pattern="^(trials|tasks)$", description="Which failure-mode rate to use.")
    dials: dict[str, dict[str, Annotated[float, Field(ge=0, le=1)]]] = Field(
        default_factory=lambda: {m: dict(d) for m, d in DEFAULT_DIALS.items()},
        description="Mode → dial → probability (0 to 1) that a task for that mode turns the dial on.",
    )
    scale_by_pass_rate: bool = Field(
        default=True, description="Multiply dial probabilities by 0.5 + pass@1 (harder data for a stronger agent)."
    )

    @field_validator("weights", "dials")
    @classmethod
    def _known_modes(cls, value: dict) -> dict:
        unknown = sorted(set(value) - set(FAILURE_MODES))
        if unknown:  # a misspelt mode would otherwise get nothing, silently
            raise ValueError(f"unknown failure mode(s) {unknown}; modes are {list(FAILURE_MODES)}")
        dials = sorted({d for v in value.values() if isinstance(v, dict) for d in v} - set(DIALS))
        if dials:
            raise ValueError(f"unknown dial(s) {dials}; known: {', '.join(DIALS)}")
        return value
