"""From graded trials to `metrics.json`: the measurement a team reads to see where its agent fails.

Pure: a list of `TrialRecord`s in, a `MeasureSummary` out. Floats are rounded so that the same trials always
serialize to the same bytes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pydantic import Field, model_serializer

from pipeline.dataset import Expected
from pipeline.grading import SIGNATURES, FailureAnalysis
from pipeline.grading.failure_modes import FAILURE_MODES
from pipeline.metrics.aggregate import count_outcomes, mean_pass_at_k, mean_pass_hat_k, per_task_pass_hat_k
from pipeline.metrics.buckets import bucket_shares
from pipeline.metrics.cost import CostSummary, cost_summary
from pipeline.metrics.errors import MetricsInputError
from pipeline.metrics.intervals import bootstrap
from pipeline.metrics.split import ExpectedSplit, expected_split
from pipeline.strict import Strict

DIFF_KINDS = ("wrong_value", "unrequested_change", "missing_change")
DIGITS = 6


class TrialRecord(Strict):
    """One graded trial, reduced to what the metrics need."""

    task_id: str
    trial: int
    template: str | None = None
    expected: Expected | None = Field(
        default=None,
        description="The task's expected outcome: 'act' (its gold changes the world) or 'refuse' (it changes"
        " nothing); None: not known.",
    )
    passed: bool | None = Field(description="None when the trial was lost to an infrastructure error.")
    failed_components: list[str] = Field(default_factory=list)
    diff_kinds: list[str] = Field(default_factory=list, description="Distinct diff kinds in the verdict.")
    analysis: FailureAnalysis | None = None
    cost: float = 0.0
    tokens: int = Field(default=0, ge=0, description="The agent's prompt + completion tokens in this trial.")


class Rate(Strict):
    trials: float = Field(description="Share of valid trials showing it.")
    tasks: float = Field(description="Share of tasks with at least one valid trial showing it.")


class MeasureSummary(Strict):
    agent: str
    tasks: int
    trials_per_task: int
    valid_trials: int
    infra_errors: int
    pass_at_1: float
    pass_at_k: dict[str, float] = Field(description="k → pass@k (at least once in k).")
    pass_hat_k: dict[str, float] = Field(description="k → pass^k (every time in k).")
    intervals: dict[str, list[float]] = Field(description="statistic → [low, high], bootstrap over tasks.")
    by_expected: dict[Expected, ExpectedSplit] = Field(
        default_factory=dict,
        description="pass@1 and pass^k (with intervals) over the tasks whose correct end changes the world ('act')"
        " and over those whose correct end changes nothing ('refuse', which an agent that never acts passes)."
        " Written only when the trials carry their task's expected outcome.",
    )
    buckets: dict[str, float] = Field(description="always / flipping / never shares of tasks.")
    failure_modes: dict[str, Rate]
    dominant_modes: dict[str, float] = Field(description="Share of failed trials whose dominant mode this is.")
    signatures: dict[str, float] = Field(description="Share of failed trials with this signature.")
    diff_categories: dict[str, Rate]
    looked_complete_share: float = Field(description="Share of failed trials that looked complete.")
    user_simulator_failures: float = Field(
        default=0.0, description="Share of failed trials the judge put down to the user simulator, not the agent."
    )
    cost: CostSummary
    short_tasks: dict[str, int] = Field(
        default_factory=dict,
        description="Tasks left with fewer than the largest k valid trials (infrastructure errors) → their valid"
        " trials; pass@k, pass^k and their intervals for a k above a task's valid trials are over the other tasks."
        " Written only when not empty.",
    )

    @model_serializer(mode="wrap")
    def _drop_empty(self, handler):
        data = handler(self)
        if not self.short_tasks:
            data.pop("short_tasks", None)  # a run without infrastructure losses keeps its bytes
        if not self.by_expected:
            data.pop("by_expected", None)
        return data


def _r(x: float) -> float:
    return round(float(x), DIGITS)


def _rounded(cost: CostSummary) -> CostSummary:
    return cost.model_copy(update={k: _r(v) for k, v in cost.model_dump().items() if isinstance(v, float)})


def _rate(records: Sequence[TrialRecord], has) -> Rate:
    valid = [r for r in records if r.passed is not None]
    by_task: dict[str, bool] = defaultdict(bool)
    for r in valid:
        by_task[r.task_id] |= bool(has(r))
    return Rate(
        trials=_r(sum(1 for r in valid if has(r)) / len(valid)) if valid else 0.0,
        tasks=_r(sum(by_task.values()) / len(by_task)) if by_task else 0.0,
    )


def summarize(
    records: Sequence[TrialRecord],
    *,
    agent: str,
    max_k: int,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    currency: str = "USD",
    priced: bool = False,
) -> MeasureSummary:
    """The run's metrics; `priced` says the records' costs come from a price table (else they are 0)."""
    if not records:
        raise MetricsInputError("no trials to summarize: the task set is empty")
    results: dict[str, list[bool | None]] = defaultdict(list)
    costs: dict[str, list[float]] = defaultdict(list)
    tokens: dict[str, list[int]] = defaultdict(list)
    templates: dict[str, str | None] = {}
    expected: dict[str, Expected | None] = {}
    for r in sorted(records, key=lambda r: (r.task_id, r.trial)):
        results[r.task_id].append(r.passed)
        costs[r.task_id].append(r.cost)
        tokens[r.task_id].append(r.tokens)
        templates[r.task_id] = r.template
        expected[r.task_id] = r.expected
    results, costs = dict(results), dict(costs)
    valid = [r for r in records if r.passed is not None]
    failed = [r for r in valid if not r.passed]
    # Trials lost to infrastructure errors are left out: a statistic at k is over the tasks with k valid trials
    # (named in short_tasks); only when no task has k valid trials is it undefined, and that is an error.
    n_valid = {t: count_outcomes(o, t)[1] for t, o in results.items()}
    short = {t: n for t, n in sorted(n_valid.items()) if n < max_k}

    def at(k: int) -> dict[str, list[bool | None]]:
        kept = {t: o for t, o in results.items() if n_valid[t] >= k}
        if not kept:
            raise MetricsInputError(
                f"k={k} exceeds the valid trials of every task (trials lost to infrastructure errors: "
                f"{len(records) - len(valid)} of {len(records)})"
            )
        return kept

    pass_at = {str(k): _r(mean_pass_at_k(at(k), k)) for k in range(1, max_k + 1)}
    pass_hat = {str(k): _r(mean_pass_hat_k(at(k), k)) for k in range(1, max_k + 1)}
    intervals: dict[str, list[float]] = {}
    for k in range(1, max_k + 1):
        iv = bootstrap(
            per_task_pass_hat_k(at(k), k), clusters=templates, resamples=resamples, confidence=confidence, seed=seed
        )
        intervals[f"pass_hat_{k}"] = [_r(iv.low), _r(iv.high)]

    def share(pred) -> float:
        return _r(sum(1 for r in failed if pred(r)) / len(failed)) if failed else 0.0

    return MeasureSummary(
        agent=agent,
        tasks=len(results),
        trials_per_task=max(len(v) for v in results.values()),
        valid_trials=len(valid),
        infra_errors=len(records) - len(valid),
        pass_at_1=pass_at["1"],
        pass_at_k=pass_at,
        pass_hat_k=pass_hat,
        intervals=intervals,
        by_expected=expected_split(
            results, expected, templates, max_k, resamples=resamples, confidence=confidence, seed=seed
        ),
        buckets={k: _r(v) for k, v in bucket_shares(at(1)).items()},
        failure_modes={m: _rate(records, lambda r, m=m: r.analysis and m in r.analysis.modes) for m in FAILURE_MODES},
        dominant_modes={m: share(lambda r, m=m: r.analysis and r.analysis.dominant == m) for m in FAILURE_MODES},
        signatures={s: share(lambda r, s=s: r.analysis and s in r.analysis.signature) for s in SIGNATURES},
        diff_categories={d: _rate(records, lambda r, d=d: d in r.diff_kinds) for d in DIFF_KINDS},
        looked_complete_share=share(lambda r: r.analysis and r.analysis.looked_complete),
        user_simulator_failures=share(lambda r: r.analysis and r.analysis.user_simulator),
        short_tasks=short,
        cost=_rounded(cost_summary(results, costs, currency, dict(tokens), priced)),
    )
