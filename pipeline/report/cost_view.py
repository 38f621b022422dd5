"""The report's cost section: what a success costs against how reliable each agent is.

Where a run is not priced its costs are all 0, and a frontier of zeros says nothing; the section then compares
the agents' tokens per success (every backend counts them) instead.
"""

from __future__ import annotations

from typing import Any

from pipeline.metrics import MeasureSummary, pareto_frontier
from pipeline.report import plots
from pipeline.report.html import Safe, note, num, pct, section, table


def cost_section(runs: dict[str, MeasureSummary], pl: Any) -> Safe:
    """Cost per success against pass^k where every run is priced; else the agents' tokens per success, so that an
    unpriced model is not drawn at a cost of 0."""
    k = min(s.trials_per_task for s in runs.values())
    priced_all = all(s.cost.priced for s in runs.values())
    recorded = all(s.cost.total_tokens or not s.cost.passing_trials for s in runs.values())
    spend = "cost" if priced_all or not recorded else "tokens"
    currency = runs["candidate"].cost.currency

    def per_success(s: MeasureSummary) -> float | None:
        return s.cost.cost_per_success if spend == "cost" else s.cost.tokens_per_success

    points = {label: (per_success(s), s.pass_hat_k.get(str(k), 0.0)) for label, s in runs.items()}
    priced = {label: (cost, score) for label, (cost, score) in points.items() if cost is not None}
    frontier = pareto_frontier(priced) if priced else []
    rows = [
        [
            label,
            s.agent,
            num(points[label][0]),
            pct(points[label][1]),
            "yes" if label in frontier else ("no passing trial" if label not in priced else "no"),
        ]
        for label, s in runs.items()
    ]
    body: list[object] = []
    if spend == "tokens":
        unpriced = ", ".join(s.agent for s in runs.values() if not s.cost.priced)
        body.append(
            note(
                f"Not priced ({unpriced}: measure.prices names no price for it), so spend is shown as the agent's"
                " prompt + completion tokens per passing trial rather than as a cost."
            )
        )
    if priced:
        body.append(
            pl.add(
                "cost_pareto",
                plots.cost_pareto(priced, frontier, k, currency, spend),
                f"{'cost' if spend == 'cost' else 'agent tokens'} per success against pass^{k}, Pareto frontier",
            )
        )
    else:
        body.append(note(f"No agent has a passing trial, so no {spend} per success: nothing to plot."))
    if spend == "cost" and priced and all(cost == 0 for cost, _ in priced.values()):
        body.append(
            note(
                "All costs are zero: the runs were not priced (no price table), so the frontier is "
                "decided by pass^k alone."
            )
        )
    unit = f"cost per success ({currency})" if spend == "cost" else "agent tokens per success"
    body.append(table(["", "agent", unit, f"pass^{k}", "on frontier"], rows))
    return section("cost", "Cost against reliability", *body)
