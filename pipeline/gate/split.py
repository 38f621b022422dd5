"""The pass^k comparison split by expected outcome: over the 'act' tasks (their gold changes the world) and over the
'refuse' tasks (it changes nothing), each with its paired bootstrap interval.

Shown beside the decision, never its criterion: promotion rests on pass^k over every task, and a significant drop
on the 'act' side blocks through the tracked metric 'act pass^k' (Holm family). The split is there so that a gain
made of refusals, which an agent that never acts passes, cannot pass unseen. A side with no tasks says so.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_serializer

from pipeline.dataset import EXPECTED, Expected
from pipeline.gate.config import GateConfig
from pipeline.gate.table import PASS_HAT_K, Table, of_expected, per_task, resampling_unit
from pipeline.metrics import bootstrap_draws, paired_bootstrap_draws, percentile_interval
from pipeline.strict import Strict

DIGITS = 6
WHAT: dict[Expected, str] = {"act": "changes the world", "refuse": "changes nothing"}


class SplitComparison(Strict):
    """pass^k over the tasks of one expected outcome; the figures are None when there are no such tasks."""

    tasks: int = Field(description="Held-out tasks with this expected outcome.")
    k: int
    candidate: float | None = Field(default=None, description="Candidate mean per-task pass^k over these tasks.")
    champion: float | None = Field(default=None, description="Champion's; None without a champion (or tasks).")
    diff: float | None = Field(
        default=None, description="candidate − champion (the candidate's own pass^k without a champion)."
    )
    low: float | None = Field(default=None, description="Lower bound of the bootstrap interval of diff.")
    high: float | None = Field(default=None, description="Upper bound of the bootstrap interval of diff.")
    confidence: float
    resampled: Literal["tasks"] | None = Field(
        default=None,
        description="'tasks' when these tasks form too few template clusters and tasks were resampled; absent:"
        " template clusters were.",
    )

    @model_serializer(mode="wrap")
    def _omit_clustered(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if data.get("resampled") is None:
            data.pop("resampled", None)
        return data


def _r(x: float) -> float:
    return round(float(x), DIGITS)


def _side(candidate: Table, champion: Table | None, config: GateConfig) -> SplitComparison:
    if not candidate:
        return SplitComparison(tasks=0, k=config.k, confidence=config.confidence)
    cand = per_task(candidate, PASS_HAT_K, config.k)
    clusters, _ = resampling_unit(candidate)
    opts: dict[str, Any] = dict(clusters=clusters, resamples=config.resamples, seed=config.seed)
    champ_mean = None
    if champion is None:
        point, draws = bootstrap_draws(cand, **opts)
    else:
        champ = per_task({t: champion[t] for t in candidate}, PASS_HAT_K, config.k)
        point, draws = paired_bootstrap_draws(cand, champ, **opts)
        champ_mean = _r(sum(champ.values()) / len(champ))
    iv = percentile_interval(point, draws, config.confidence)
    return SplitComparison(
        tasks=len(cand),
        k=config.k,
        candidate=_r(sum(cand.values()) / len(cand)),
        champion=champ_mean,
        diff=_r(iv.point),
        low=_r(iv.low),
        high=_r(iv.high),
        confidence=config.confidence,
        resampled=None if clusters is not None else "tasks",
    )


def compare_by_expected(
    candidate: Table, champion: Table | None, config: GateConfig
) -> dict[Expected, SplitComparison]:
    """Both sides' comparison; empty when no task's expected outcome is known (tables built without it)."""
    if not any(o.expected for o in candidate.values()):
        return {}
    return {side: _side(of_expected(candidate, side), champion, config) for side in EXPECTED}


def split_reasons(split: dict[Expected, SplitComparison], config: GateConfig) -> list[str]:
    """One line per side: its comparison (informational), or that the held-out tasks hold none of its kind."""
    out = []
    level = f"{config.confidence:.0%}"
    for side, c in split.items():
        if c.tasks == 0 or c.candidate is None or c.diff is None or c.low is None or c.high is None:
            out.append(f"{side} tasks: none among the held-out tasks (no task whose gold {WHAT[side]})")
            continue
        span = f"{level} interval {c.low:+.3f} … {c.high:+.3f}"
        head = f"{side} tasks ({c.tasks}; the gold {WHAT[side]})"
        if c.champion is None:
            figure = f"pass^{c.k} {c.candidate:.3f} ({span})"
        else:
            figure = f"pass^{c.k} {c.champion:.3f} → {c.candidate:.3f}, {c.diff:+.3f} ({span})"
        note = "; an agent that never acts passes these" if side == "refuse" else ""
        out.append(f"{head}: {figure} — shown apart, not the promotion criterion{note}")
    return out
