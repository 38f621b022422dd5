"""The gate's settings: what counts as better (pass^k, margin, confidence) and what must not get worse.

The defaults are the ones the power simulation (bench/bench_gate_power.py) was run with; change k, the
confidence or the evaluation size and the false-promotion rate and power change with them. `min_effect`
defaults to the +10-point pass^4 gain the default evaluation size was chosen to detect.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pipeline.grading import LOOP_MODES, Tau2Config, VerdictName
from pipeline.grading.modes import FAILURE_MODES
from pipeline.rollout import Limits

PASS_AT_1 = "pass@1"
ACT_PASS_HAT_K = "act pass^k"
"""pass^k over the tasks whose gold changes the world: a gain made of refusals alone cannot hide a drop here."""
HIGHER_IS_BETTER: frozenset[str] = frozenset({PASS_AT_1, ACT_PASS_HAT_K})
TRACKABLE: tuple[str, ...] = (PASS_AT_1, ACT_PASS_HAT_K, *FAILURE_MODES)
TRACKED: tuple[str, ...] = (PASS_AT_1, ACT_PASS_HAT_K, *LOOP_MODES)
"""What the gate tracks by default: pass@1, pass^k over the 'act' tasks, and the modes the loop targets by default."""

# Held-out evaluation tasks the defaults are sized for (bench/bench_gate_power.py, k=4 trials per task): power
# for a true +10-point pass^4 gain 91% (84% on a harder, more-flipping population; 80% at 150 tasks, 63% at
# 100), false promotions when nothing changed 4.2%. See bench/results/gate_power.json.
EVAL_TASKS = 200


class GateConfig(BaseModel):
    """How the gate decides; unknown keys are an error."""

    model_config = ConfigDict(extra="forbid")

    k: int = Field(default=4, ge=1, description="The k of pass^k; every task needs at least k valid trials.")
    margin: float = Field(
        default=0.0,
        ge=-1.0,
        le=1.0,
        allow_inf_nan=False,
        description="Promote only if the lower bound of candidate − champion pass^k exceeds this.",
    )
    confidence: float = Field(
        default=0.95, gt=0.0, lt=1.0, description="Two-sided level of the paired bootstrap interval of the pass^k gain."
    )
    power: float = Field(
        default=0.8,
        gt=0.0,
        lt=1.0,
        description="Power the minimum detectable effect is stated at: the MDE is the true pass^k gain the gate "
        "would promote with this probability at its evaluation size.",
    )
    min_effect: float = Field(
        default=0.10,
        gt=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="Smallest true pass^k gain beyond the margin worth seeing: an interval straddling the margin "
        "is 'inconclusive' (not 'block') while the MDE exceeds margin + min_effect.",
    )
    resamples: int = Field(default=2000, ge=100, description="Bootstrap resamples and sign-flip permutations.")
    seed: int = Field(default=0, description="Seed of the bootstrap and the permutations: same inputs, same decision.")
    tracked: list[str] = Field(
        default_factory=lambda: list(TRACKED),
        description="Metrics that must not get significantly worse: 'pass@1', 'act pass^k' (pass^k over the tasks"
        " whose gold changes the world; an agent that never acts passes the others) and failure-mode names"
        " (rate = per-task share of valid trials showing the mode).",
    )
    alpha: float = Field(
        default=0.05, gt=0.0, lt=1.0, description="Family-wise level of the Holm-corrected 'got worse' tests."
    )
    limits: Limits = Field(
        default_factory=Limits, description="Episode limits the trajectories are re-graded under (as measured)."
    )
    verdict: VerdictName = Field(
        default="strict",
        description="Which verdict decides pass/fail: 'strict' (ours: state, static checks, authorization,"
        " confirmation, task checks) or 'tau2' (τ²-bench's reward: end-state match, its basis, its termination rule).",
    )
    tau2: Tau2Config = Field(default_factory=Tau2Config, description="How the τ²-compatible reward replays calls.")
    require_all_tasks: bool = Field(
        default=True,
        description="Both runs must cover every task of the held-out file (no gating on a chosen subset).",
    )

    @field_validator("tracked")
    @classmethod
    def _known_metrics(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(TRACKABLE))
        if unknown:
            raise ValueError(f"unknown tracked metric(s) {unknown}; choose from {list(TRACKABLE)}")
        if len(set(value)) != len(value):
            raise ValueError(f"tracked metrics repeat: {value}")
        return value
