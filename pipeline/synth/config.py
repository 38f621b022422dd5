"""The synthesis settings: params.yaml's `synthesize.config` and the options of `agentloop synthesize`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pipeline.authoring import DIALS
from pipeline.synth.judge import JudgeConfig
from pipeline.synth.verify import VerifyConfig

__all__ = ["SynthConfig"]


class SynthConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seed: int = Field(default=0, description="Same world, targets and seed: same tasks.")
    max_generations: int = Field(default=8, ge=0, description="Generations of descendants after the atomic one.")
    generation_share: float = Field(
        default=0.34, gt=0, le=1, description="Share of a mode's budget one generation may spend (depth grows)."
    )
    max_parts: int = Field(default=3, ge=1, description="Most requests in one task.")
    max_depth: int = Field(default=4, ge=1, description="Deepest evolution depth.")
    max_rework: int = Field(default=3, ge=0, description="Repairs before a candidate is dropped.")
    measured_share: float = Field(
        default=0.75,
        ge=0,
        le=1,
        description="Share of each mode's descendants aimed at the cells where the measurement saw that mode fail"
        " (drawn by failure weight, `Targets.cells`); the rest, and all when the targets carry no cells, go to the"
        " least-covered cells.",
    )
    atomic_share: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="Generation 0 makes the atomic task of every template the measurement failed in (`Targets.cells`)"
        " and of at most this share of the budget's other templates, in taxonomy order; 1 (the default) makes every"
        " template once, 0 spends a budget smaller than the taxonomy on the failing templates alone.",
    )
    twin_share: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Share of the descendants aimed at a measured refusal cell made instead as its twin (the same"
        " write where the policy allows it, same dial; `Taxonomy.twin`), so that training on refusals does not"
        " teach refusing whatever looks alike.",
    )
    refusal_twin_share: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Share of the descendants aimed at a measured write cell made instead as one of its refused twins"
        " (the same write where the policy forbids it, same dial where it has it; `Taxonomy.refusals`), so that"
        " training on writes does not teach making them wherever a request looks alike. The base a loop starts"
        " from often fails only writes, so `twin_share` alone finds no refusal cell to pair.",
    )
    dials: list[str] | None = Field(
        default=None,
        description="Dials evolution may turn on (None = all of " + ", ".join(DIALS) + "); e.g. only the messes"
        " and shapes of the held-out tasks, so targeted data looks like the situations the agent failed in.",
    )
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    judge: JudgeConfig | None = Field(default=None, description="Optional judge cascade; None = off.")

    @field_validator("dials")
    @classmethod
    def _known_dials(cls, v: list[str] | None) -> list[str] | None:
        unknown = sorted(set(v or ()) - set(DIALS))
        if unknown:
            raise ValueError(f"unknown dial(s) {unknown}; known: {', '.join(DIALS)}")
        return v
