"""Price table, trial cost from Usage, cost per success and per all-k task."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from pipeline.metrics import CostSummary, MetricsInputError, Price, PriceTable, cost_summary
from pipeline.rollout.trajectory import Usage


def test_trial_cost_from_usage_hosted_and_local():
    table = PriceTable.model_validate(
        {
            "models": {
                "hosted": {"prompt_per_million": 2.5, "completion_per_million": 10.0},
                "local": {"per_compute_second": 0.0004},
            }
        }
    )
    usage = Usage(prompt_tokens=40_000, completion_tokens=1_500, compute_s=30.0)
    assert table.cost("hosted", usage) == pytest.approx(0.1 + 0.015)  # compute time is free for a hosted price
    assert table.cost("local", usage) == pytest.approx(0.012)  # tokens are free for a local price
    summed = Usage(prompt_tokens=1_000_000) + Usage(completion_tokens=1_000_000)
    assert table.cost("hosted", summed) == pytest.approx(12.5)
    assert table.currency == "USD"


def test_price_table_rejects_bad_prices_and_unknown_models():
    with pytest.raises(MetricsInputError, match=r"no price for model 'mystery' \(priced: \['a'\]\)"):
        PriceTable(models={"a": Price()}).cost("mystery", Usage())
    with pytest.raises(ValidationError, match="prompt_per_million"):
        Price(prompt_per_million=-1)
    with pytest.raises(ValidationError, match="completion_per_million"):
        Price(completion_per_million=float("inf"))
    with pytest.raises(ValidationError, match="per_token"):
        Price(per_token=1.0)


def test_cost_per_success_and_per_all_k_task():
    results = {
        "a": [True, True, True],  # all-pass
        "b": [True, False, True],
        "c": [False, False, None],  # infra error: its cost still counts
    }
    costs = {"a": [1.0, 1.0, 1.0], "b": [2.0, 2.0, 2.0], "c": [1.0, 1.0, 0.5]}
    s = cost_summary(results, costs)
    assert s.total_cost == 11.5
    assert (s.trials, s.valid_trials, s.passing_trials, s.tasks, s.all_pass_tasks) == (9, 8, 5, 3, 1)
    assert s.cost_per_trial == pytest.approx(11.5 / 9)
    assert s.cost_per_success == pytest.approx(11.5 / 5)
    assert s.cost_per_all_k_task == 11.5


def test_zero_passes_give_none_not_inf_and_stay_json():
    s = cost_summary({"a": [False, False], "b": [None, None]}, {"a": [0.1, 0.1], "b": [0.0, 0.0]}, currency="EUR")
    assert s.cost_per_success is None and s.cost_per_all_k_task is None
    assert s.all_pass_tasks == 0  # a task with no valid trial did not pass on all of them
    data = json.loads(s.model_dump_json())
    assert data["cost_per_success"] is None and data["currency"] == "EUR"
    assert CostSummary.model_validate(data) == s


def test_cost_summary_errors_name_the_task():
    with pytest.raises(MetricsInputError, match=r"missing \['b'\], extra \['z'\]"):
        cost_summary({"a": [True], "b": [True]}, {"a": [1.0], "z": [1.0]})
    with pytest.raises(MetricsInputError, match=r"task 'a': 1 costs for 2 trial outcomes"):
        cost_summary({"a": [True, False]}, {"a": [1.0]})
    with pytest.raises(MetricsInputError, match=r"task 'a' trial 1: cost must be a finite number >= 0, got nan"):
        cost_summary({"a": [True, False]}, {"a": [1.0, float("nan")]})
    with pytest.raises(MetricsInputError, match=r"got -0.5"):
        cost_summary({"a": [True]}, {"a": [-0.5]})
    with pytest.raises(MetricsInputError, match="empty task set"):
        cost_summary({}, {})


def test_tokens_per_success_and_per_all_k_task():
    results = {"a": [True, True], "b": [True, False], "c": [None, False]}
    tokens = {"a": [100, 300], "b": [200, 200], "c": [50, 150]}
    costs = {t: [0.0] * 2 for t in results}
    s = cost_summary(results, costs, tokens=tokens)
    assert (s.priced, s.total_tokens, s.tokens_per_success, s.tokens_per_all_k_task) == (False, 1000, 1000 / 3, 1000)
    assert cost_summary(results, costs, "EUR", tokens, priced=True).priced
    assert cost_summary(results, costs).tokens_per_success is None  # not recorded: not a count of zero
    with pytest.raises(ValidationError, match="cached_prompt_per_million"):
        Price(cached_prompt_per_million=-0.5)
