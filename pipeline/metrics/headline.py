"""An iteration's headline: the few numbers a person compares from one iteration to the next.

The champion's and the candidate's pass^k (at the gate's k; also over the tasks whose gold changes the world), pass@1
and failure-mode rates, the gain with its
interval and the minimum detectable effect, and the gate's outcome. The MLflow iteration run, the report's
iteration history and the CI summary all read it, so every one of them names and formats the same quantities the
same way: shares as percentages, differences of shares as percentage points ("+23.5 pp").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline.metrics.errors import MetricsInputError
from pipeline.metrics.summary import MeasureSummary

OUTCOME_WORDS = {"promote": "promote", "block": "blocked", "inconclusive": "inconclusive"}


def pct(x: float | None, digits: int = 1) -> str:
    """A share as a percentage.

    >>> pct(0.315), pct(None)
    ('31.5%', '—')
    """
    return "—" if x is None else f"{x:.{digits}%}"


def pp(diff: float | None, digits: int = 1) -> str:
    """A difference of two shares in percentage points, signed.

    >>> pp(0.235), pp(-0.04125), pp(0.0), pp(None)
    ('+23.5 pp', '-4.1 pp', '+0.0 pp', '—')
    """
    return "—" if diff is None else f"{diff * 100:+.{digits}f} pp"


class SideHeadline(BaseModel):
    """One measured agent's headline numbers."""

    model_config = ConfigDict(extra="forbid")

    agent: str = Field(description="The measured agent spec.")
    pass_hat_k: float = Field(description="Mean per-task pass^k at the headline k.")
    pass_at_1: float = Field(description="Share of valid trials that passed.")
    modes: dict[str, float] = Field(description="Failure mode → share of valid trials showing it.")
    act_pass_hat_k: float | None = Field(
        default=None,
        description="pass^k at the headline k over the tasks whose gold changes the world (an agent that never acts"
        " passes the others); None: not measured.",
    )

    @classmethod
    def of(cls, summary: MeasureSummary, k: int) -> SideHeadline:
        if str(k) not in summary.pass_hat_k:
            measured = len(summary.pass_hat_k)
            raise MetricsInputError(f"{summary.agent}: metrics.json has no pass^{k} (measured k = 1..{measured})")
        act = summary.by_expected.get("act")
        return cls(
            agent=summary.agent,
            pass_hat_k=summary.pass_hat_k[str(k)],
            pass_at_1=summary.pass_at_1,
            modes={m: r.trials for m, r in summary.failure_modes.items()},
            act_pass_hat_k=act.pass_hat_k.get(str(k)) if act is not None else None,
        )


class IterationHeadline(BaseModel):
    """What one iteration did, in the numbers a person compares between iterations."""

    model_config = ConfigDict(extra="forbid")

    iteration: int
    k: int = Field(description="The k of the headline pass^k (the gate's).")
    baseline: str = Field(description="What the iteration started from: 'v3' for a registered version, else a label.")
    champion: SideHeadline = Field(description="The baseline, measured (the gate's champion).")
    candidate: SideHeadline
    gain: float = Field(description="candidate − champion pass^k, as the gate computed it.")
    low: float = Field(description="Lower bound of the gain's interval.")
    high: float = Field(description="Upper bound of the gain's interval.")
    confidence: float = Field(description="Confidence of that interval.")
    mde: float | None = Field(default=None, description="Minimum detectable effect of the gate, when it says one.")
    outcome: str = Field(description="The gate's outcome: promote, block or inconclusive.")
    candidate_version: str | None = Field(default=None, description="The candidate's registered version, once known.")
    champion_moved: bool | None = Field(default=None, description="Whether alias champion moved to the candidate.")

    @property
    def outcome_word(self) -> str:
        """What happened, in the words a run list shows: 'promoted v2', 'blocked', 'inconclusive', ...

        >>> h = example()
        >>> h.outcome_word, h.model_copy(update={"champion_moved": False}).outcome_word
        ('promoted v2', 'passed, not promoted')
        """
        if self.outcome == "promote" and self.champion_moved:
            return f"promoted v{self.candidate_version}" if self.candidate_version else "promoted"
        if self.outcome == "promote" and self.champion_moved is False:
            return "passed, not promoted"
        return OUTCOME_WORDS.get(self.outcome, self.outcome)

    def sentence(self) -> str:
        """The headline in one line.

        >>> example().sentence()
        'pass^4 31.5% → 55.0% (+23.5 pp, 95% interval +6.1 … +44.1 pp, detectable from +26.8 pp): promoted v2'
        """
        mde = f", detectable from {pp(self.mde)}" if self.mde is not None else ""
        return (
            f"pass^{self.k} {pct(self.champion.pass_hat_k)} → {pct(self.candidate.pass_hat_k)} ({pp(self.gain)}, "
            f"{self.confidence:.0%} interval {pp(self.low).removesuffix(' pp')} … {pp(self.high)}{mde}): "
            f"{self.outcome_word}"
        )


def headline(
    iteration: int, baseline: str, champion: MeasureSummary, candidate: MeasureSummary, gate: Mapping[str, Any]
) -> IterationHeadline:
    """The headline of an iteration from its two measurements and its gate.json (as `agentloop gate` writes it)."""
    ph = gate.get("pass_hat_k")
    if not isinstance(ph, Mapping) or not all(isinstance(ph.get(f), int | float) for f in ("k", "diff", "low", "high")):
        raise MetricsInputError("gate.json: pass_hat_k must hold k, diff, low and high (written by `agentloop gate`)")
    k = int(ph["k"])
    return IterationHeadline(
        iteration=iteration,
        k=k,
        baseline=baseline,
        champion=SideHeadline.of(champion, k),
        candidate=SideHeadline.of(candidate, k),
        gain=ph["diff"],
        low=ph["low"],
        high=ph["high"],
        confidence=ph.get("confidence", 0.95),
        mde=ph.get("mde"),
        outcome=gate.get("outcome") or ("promote" if gate.get("promote") else "block"),
    )


def example() -> IterationHeadline:
    """A filled-in headline (for examples and tests)."""
    side = dict(agent="hf:models/baseline/checkpoint", pass_at_1=0.3825)
    return IterationHeadline(
        iteration=2,
        k=4,
        baseline="v1",
        champion=SideHeadline(**side, pass_hat_k=0.315, modes={"plan_adherence": 0.08125, "invention": 0.36}),
        candidate=SideHeadline(
            agent="hf:models/candidate/checkpoint",
            pass_hat_k=0.55,
            pass_at_1=0.65375,
            modes={"plan_adherence": 0.04, "invention": 0.2425},
        ),
        gain=0.235,
        low=0.061076,
        high=0.441343,
        confidence=0.95,
        mde=0.268214,
        outcome="promote",
        candidate_version="2",
        champion_moved=True,
    )
