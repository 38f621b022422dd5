"""The report's cost section: cost per success where every run is priced, the agents' tokens per success where
one is not (an unpriced model is not drawn at a cost of 0)."""

from __future__ import annotations

from pipeline.metrics.summary import TrialRecord, summarize
from pipeline.report.build import _Plots
from pipeline.report.cost_view import cost_section


def run(agent: str, passes: list[bool], tokens: int, cost: float, priced: bool):
    records = [TrialRecord(task_id=f"t{i}", trial=0, passed=p, cost=cost, tokens=tokens) for i, p in enumerate(passes)]
    return summarize(records, agent=agent, max_k=1, resamples=10, priced=priced, currency="EUR")


def test_unpriced_runs_plot_tokens_per_success(tmp_path):
    runs = {
        "baseline": run("hf:base", [True, False], 400, 0.0, False),
        "candidate": run("openai:gpt-x", [True, True], 300, 0.01, True),
    }
    plots = _Plots(tmp_path)
    html = str(cost_section(runs, plots))
    assert "agent tokens per success" in html and "Not priced (hf:base" in html
    assert "800" in html and "300" in html  # 2 × 400 tokens over one pass; 2 × 300 over two
    assert "All costs are zero" not in html and [p.name for p in plots.written] == ["cost_pareto.png"]


def test_priced_runs_plot_cost_per_success(tmp_path):
    runs = {
        "baseline": run("openai:a", [True, False], 400, 0.02, True),
        "candidate": run("openai:b", [True, True], 300, 0.01, True),
    }
    html = str(cost_section(runs, _Plots(tmp_path)))
    assert "cost per success (EUR)" in html and "tokens per success" not in html and "0.04" in html
