"""Planting failure modes in a scripted agent, for any domain: which modes, at which rates, decided by a hash.

Whether a mode is planted in a trial is decided by a hash of (seed, task id, trial, mode), so the same
configuration always plants the same flaws and a domain's flawed agent can say which were planted without
running anything (`planted(task, trial)`). The modes are the registry's (`pipeline.grading.modes`); how a mode is
planted is the domain's (retail: `pipeline.domains.retail.flawed`; airline: `pipeline.domains.airline.flawed`),
except a flaw any scripted episode can plant the same way (inaction: `pipeline.agents.scripted.inaction`). A
domain where the customer holds tools may plant the dual-control modes too (telecom:
`pipeline.domains.telecom.flawed`).
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from pipeline.grading import BY_NAME, DUAL_CONTROL
from pipeline.grading.modes import FAILURE_MODES

MODES: tuple[str, ...] = FAILURE_MODES
"""The modes a flawed agent may plant, in planting order (the registry's)."""
DUAL_CONTROL_MODES: tuple[str, ...] = tuple(DUAL_CONTROL)
INACTION = "inaction"


def _plantable(name: str) -> str:
    if name not in MODES and name not in DUAL_CONTROL_MODES:
        raise ValueError(f"unknown mode {name!r}; modes: {', '.join((*MODES, *DUAL_CONTROL_MODES))}")
    return name


Mode = Annotated[str, AfterValidator(_plantable)]
"""A mode a flawed agent plants: a failure mode or a dual-control mode."""


class FlawConfig(BaseModel):
    """Planting rate per mode (share of trials; a missing mode is never planted) and the planting hash's seed."""

    model_config = ConfigDict(extra="forbid")

    rates: dict[Mode, Annotated[float, Field(ge=0.0, le=1.0)]] = Field(
        default_factory=dict,
        description="Mode → rate, e.g. {'invention': 0.3}; modes: " + ", ".join((*MODES, *DUAL_CONTROL_MODES)) + ".",
    )
    seed: int = Field(default=0, description="Seed of the planting hash; same seed, same planted flaws.")

    def rate(self, mode: str) -> float:
        """The planting rate of `mode` (0 when it is not planted)."""
        return self.rates.get(mode, 0.0)


def default_rates(rate: float | None = None) -> dict[str, float]:
    """Mode → planting rate of the plain flawed agent: each mode's registry default, or `rate` for every mode."""
    return {m: BY_NAME[m].flaw_rate if rate is None else rate for m in MODES}


def inaction_variants(i: int, requests: int) -> list[str]:
    """The inaction variants that fit request `i` of `requests`: a wrongful refusal on any; giving up or moving on
    only on the last one (the customer would repeat the request, and a later request's planted flaw never show)."""
    names = BY_NAME[INACTION].variants
    return [v for v in names if v == "wrongful_refusal" or i == requests - 1]


def unit(*parts: object) -> float:
    """A number in [0, 1) fixed by `parts`: the planting decisions' coin."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class PlantingAgent:
    """A domain's oracle with flaws planted per `FlawConfig`. A domain's subclass sets `oracle` (the oracle
    agent's class), `episode` (the flawed episode: `episode(info, flaws, seed)`) and `plan_flaws` (`f(config,
    task, trial) -> {request index: (mode, variant)}`); a trial with nothing planted is the oracle's."""

    oracle: Any
    episode: Any

    @staticmethod
    def plan_flaws(config: FlawConfig, task: Any, trial: int) -> dict[int, tuple[str, str]]:
        raise NotImplementedError

    def __init__(self, config: FlawConfig | None = None) -> None:
        self.config = config or FlawConfig()
        rates = ",".join(f"{m}={r}" for m, r in sorted(self.config.rates.items()))
        self.name = f"flawed({rates},seed={self.config.seed})"
        self._oracle = self.oracle()

    def planted(self, task: Any, trial: int) -> list[str]:
        """The modes planted in this (task, trial): the ground truth for a failure-mode classifier."""
        return sorted({mode for mode, _ in self.plan_flaws(self.config, task, trial).values()})

    def planted_variants(self, task: Any, trial: int) -> dict[int, tuple[str, str]]:
        return self.plan_flaws(self.config, task, trial)

    def start(self, info: Any) -> Any:
        flaws = self.plan_flaws(self.config, info.task, info.trial)
        return self.episode(info, flaws, self.config.seed) if flaws else self._oracle.start(info)
