"""pass^k split by a task's expected outcome: the tasks whose correct end changes the world ('act') apart from those
whose correct end changes nothing ('refuse').

An agent that never acts passes every 'refuse' task, so a pass^k gain made of refusals looks, in the overall
figure, like a gain at the job; the split shows where a change came from. Each side is summarised as the whole run
is (pass@1, pass^k by k, bootstrap intervals clustered by template), over its own tasks; a side with no tasks says
so (`tasks: 0`, no figures) rather than being left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import Field

from pipeline.dataset import EXPECTED, Expected
from pipeline.metrics.aggregate import Outcome, count_outcomes, mean_pass_at_k, mean_pass_hat_k, per_task_pass_hat_k
from pipeline.metrics.intervals import bootstrap
from pipeline.strict import Strict

DIGITS = 6


class ExpectedSplit(Strict):
    """One side of the split: its tasks and their pass figures (none when it has no tasks)."""

    tasks: int = Field(description="Tasks with this expected outcome.")
    pass_at_1: float | None = Field(default=None, description="Mean per-task pass rate; None: no tasks.")
    pass_hat_k: dict[str, float] = Field(
        default_factory=dict, description="k → pass^k over these tasks (a k no task has the valid trials for: absent)."
    )
    intervals: dict[str, list[float]] = Field(
        default_factory=dict, description="pass_hat_<k> → [low, high], bootstrap over these tasks."
    )


def _r(x: float) -> float:
    return round(float(x), DIGITS)


def expected_split(
    results: Mapping[str, Sequence[Outcome]],
    expected: Mapping[str, Expected | None],
    templates: Mapping[str, str | None],
    max_k: int,
    *,
    resamples: int,
    confidence: float,
    seed: int,
) -> dict[Expected, ExpectedSplit]:
    """Both sides of the split of `results` (task → outcomes) by `expected` (task → 'act' / 'refuse'); empty when no
    task's expected outcome is known (records written without it)."""
    if not any(expected.get(t) for t in results):
        return {}
    out: dict[Expected, ExpectedSplit] = {}
    for side in EXPECTED:
        mine = {t: o for t, o in results.items() if expected.get(t) == side}
        n_valid = {t: count_outcomes(o, t)[1] for t, o in mine.items()}
        pass_hat: dict[str, float] = {}
        intervals: dict[str, list[float]] = {}
        pass_at_1 = None
        for k in range(1, max_k + 1):
            kept = {t: o for t, o in mine.items() if n_valid[t] >= k}
            if not kept:
                continue
            if k == 1:
                pass_at_1 = _r(mean_pass_at_k(kept, 1))
            pass_hat[str(k)] = _r(mean_pass_hat_k(kept, k))
            iv = bootstrap(
                per_task_pass_hat_k(kept, k), clusters=templates, resamples=resamples, confidence=confidence, seed=seed
            )
            intervals[f"pass_hat_{k}"] = [_r(iv.low), _r(iv.high)]
        out[side] = ExpectedSplit(tasks=len(mine), pass_at_1=pass_at_1, pass_hat_k=pass_hat, intervals=intervals)
    return out
