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

from pydantic import Field

from pipeline.metrics.aggregate import Results, task_counts
from pipeline.metrics.errors import MetricsInputError
from pipeline.rollout import Usage
from pipeline.strict import Strict


class Price(Strict):
    """The price of one model."""

    prompt_per_million: float = Field(
        default=0.0, ge=0, allow_inf_nan=False, description="Currency units per million prompt tokens."
    )
    completion_per_million: float = Field(
        default=0.0,
        ge=0,
        allow_inf_nan=False,
        description="Currency units per million completion tokens (reasoning tokens are completion tokens).",
    )
    cached_prompt_per_million: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="Currency units per million prompt tokens served from the prompt cache (None: the prompt price).",
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
        >>> cached = Price(prompt_per_million=2, cached_prompt_per_million=0.5)
        >>> cached.cost(Usage(prompt_tokens=3000, cached_prompt_tokens=2000))
        0.003
        """
        cached = min(usage.cached_prompt_tokens, usage.prompt_tokens)
        cached_price = (
            self.prompt_per_million if self.cached_prompt_per_million is None else self.cached_prompt_per_million
        )
        return (
            (usage.prompt_tokens - cached) * self.prompt_per_million / 1e6
            + cached * cached_price / 1e6
            + usage.completion_tokens * self.completion_per_million / 1e6
            + usage.compute_s * self.per_compute_second
        )


class PriceTable(Strict):
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
        found = self.find(model)
        if found is None:
            raise MetricsInputError(f"no price for model {model!r} (priced: {sorted(self.models)})")
        return found

    def find(self, name: str) -> Price | None:
        """The price of an agent or model name: the name itself, else the model an `openai:MODEL[,...]` agent
        names (so `gpt-x` prices `openai:gpt-x`); None when neither is in the table.

        >>> PriceTable(models={"gpt-x": Price(prompt_per_million=1)}).find("openai:gpt-x").prompt_per_million
        1.0
        """
        if name in self.models:
            return self.models[name]
        kind, _, rest = name.partition(":")
        model = rest.partition(",")[0]
        return self.models.get(model) if kind == "openai" and model else None

    def cost(self, model: str, usage: Usage) -> float:
        """Cost of ``usage`` at ``model``'s price."""
        return self.price(model).cost(usage)


class CostSummary(Strict):
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
    priced: bool = Field(
        default=False, description="The agent's model had a price; unpriced, every cost is 0 and tokens tell the spend."
    )
    total_tokens: int = Field(default=0, description="The agent's prompt + completion tokens over the same trials.")
    tokens_per_success: float | None = Field(
        default=None, description="total_tokens / passing_trials; None with no passing trial (or none recorded)."
    )
    tokens_per_all_k_task: float | None = Field(
        default=None, description="total_tokens / all_pass_tasks; None when no task passed on all its trials."
    )


def _ratio(num: float, den: int) -> float | None:
    return num / den if den else None


def cost_summary(
    results: Results,
    costs: Mapping[str, Sequence[float]],
    currency: str = "USD",
    tokens: Mapping[str, Sequence[int]] | None = None,
    priced: bool = False,
) -> CostSummary:
    """Cost per trial, per successful trial and per all-k task; ``costs`` (and ``tokens``, the agent's tokens of
    each trial) parallel ``results`` trial by trial.

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
    total_tokens = sum(sum(t) for t in tokens.values()) if tokens else 0
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
        priced=priced,
        total_tokens=total_tokens,
        tokens_per_success=_ratio(total_tokens, passing) if tokens else None,
        tokens_per_all_k_task=_ratio(total_tokens, all_pass) if tokens else None,
    )
