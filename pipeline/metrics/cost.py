"""What a measured pass rate costs: a per-model price table, the cost of a trial, and the cost per success.

Prices are per million prompt / completion tokens for hosted models, or per compute-second for local ones (a
price may combine both). Totals include every trial whose cost was recorded, infrastructure-error trials too:
that money was spent even though the trial is not judged. Ratios with a zero denominator (no passing trial,
no task passed on all its trials) are None rather than inf, so they stay valid JSON and cannot be mistaken
for a number in a table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from pipeline.metrics.aggregate import Results, task_counts
from pipeline.metrics.errors import MetricsInputError
from pipeline.rollout.trajectory import Usage


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Price(_Strict):
    """The price of one model."""

    prompt_per_million: float = Field(
        default=0.0, ge=0, allow_inf_nan=False, description="Currency units per million prompt tokens."
    )
    completion_per_million: float = Field(
        default=0.0, ge=0, allow_inf_nan=False, description="Currency units per million completion tokens."
    )
    per_compute_second: float = Field(
        default=0.0, ge=0, allow_inf_nan=False, description="Currency units per second of compute (local models)."
    )

    def cost(self, usage: Usage) -> float:
        """Cost of the usage of one trial (or of anything else a Usage sums).

        >>> price = Price(prompt_per_million=3, completion_per_million=15)
        >>> price.cost(Usage(prompt_tokens=2000, completion_tokens=100))
        0.0075
        >>> Price(per_compute_second=0.001).cost(Usage(compute_s=12.5))
        0.0125
        """
        return (
            usage.prompt_tokens * self.prompt_per_million / 1e6
            + usage.completion_tokens * self.completion_per_million / 1e6
            + usage.compute_s * self.per_compute_second
        )


class PriceTable(_Strict):
    """Prices by model name; an unpriced model is an error, never a silent zero."""

    currency: str = Field(default="USD", description="Unit of every price and cost in this table.")
    models: dict[str, Price] = Field(default_factory=dict, description="Model name -> its price.")

    def price(self, model: str) -> Price:
        """The price of ``model``.

        >>> PriceTable(models={"gpt-x": Price()}).price("gpt-y")
        Traceback (most recent call last):
        ...
        pipeline.metrics.errors.MetricsInputError: no price for model 'gpt-y' (priced: ['gpt-x'])
        """
        try:
            return self.models[model]
        except KeyError:
            raise MetricsInputError(f"no price for model {model!r} (priced: {sorted(self.models)})") from None

    def cost(self, model: str, usage: Usage) -> float:
        """Cost of ``usage`` at ``model``'s price."""
        return self.price(model).cost(usage)


class CostSummary(_Strict):
    """Cost figures for one agent on one task set."""

    currency: str = Field(default="USD", description="Unit of the cost figures.")
    total_cost: float = Field(description="Sum of every recorded trial cost, infrastructure errors included.")
    trials: int = Field(description="Trials with a recorded cost, infrastructure errors included.")
    valid_trials: int = Field(description="Trials with a verdict (infrastructure errors excluded).")
    passing_trials: int = Field(description="Trials that passed.")
    tasks: int = Field(description="Tasks in the set.")
    all_pass_tasks: int = Field(description="Tasks that passed on every valid trial (at least one).")
    cost_per_trial: float | None = Field(description="total_cost / trials; None with no trials.")
    cost_per_success: float | None = Field(description="total_cost / passing_trials; None with no passing trial.")
    cost_per_all_k_task: float | None = Field(
        description="total_cost / all_pass_tasks; None when no task passed on all its trials."
    )


def _ratio(num: float, den: int) -> float | None:
    return num / den if den else None


def cost_summary(results: Results, costs: Mapping[str, Sequence[float]], currency: str = "USD") -> CostSummary:
    """Cost per trial, per successful trial and per all-k task; ``costs`` parallels ``results`` trial by trial.

    >>> s = cost_summary({"a": [True, True], "b": [False, None]}, {"a": [0.5, 0.5], "b": [1.0, 2.0]})
    >>> s.total_cost, s.cost_per_success, s.cost_per_all_k_task, s.cost_per_trial
    (4.0, 2.0, 4.0, 1.0)
    >>> cost_summary({"a": [False]}, {"a": [0.1]}).cost_per_success is None
    True
    """
    counts = task_counts(results)
    missing = sorted(set(results) - set(costs))
    extra = sorted(set(costs) - set(results))
    if missing or extra:
        raise MetricsInputError(f"costs must cover exactly the result tasks; missing {missing[:5]}, extra {extra[:5]}")
    total = 0.0
    trials = 0
    for task_id, outcomes in results.items():
        task_costs = costs[task_id]
        if len(task_costs) != len(outcomes):
            raise MetricsInputError(
                f"task {task_id!r}: {len(task_costs)} costs for {len(outcomes)} trial outcomes (must match)"
            )
        for i, x in enumerate(task_costs):
            if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x) or x < 0:
                raise MetricsInputError(f"task {task_id!r} trial {i}: cost must be a finite number >= 0, got {x!r}")
        total += math.fsum(task_costs)
        trials += len(task_costs)
    passing = sum(c for c, _ in counts.values())
    all_pass = sum(1 for c, n in counts.values() if n > 0 and c == n)
    return CostSummary(
        currency=currency,
        total_cost=total,
        trials=trials,
        valid_trials=sum(n for _, n in counts.values()),
        passing_trials=passing,
        tasks=len(counts),
        all_pass_tasks=all_pass,
        cost_per_trial=_ratio(total, trials),
        cost_per_success=_ratio(total, passing),
        cost_per_all_k_task=_ratio(total, all_pass),
    )
