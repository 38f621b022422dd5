"""The report's iteration history: this iteration beside the earlier ones the tracking store holds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.metrics import IterationHeadline, pct, pp
from pipeline.report import plots
from pipeline.report.html import Safe, note, section, table

HISTORY_PLOT = "iterations"


def _interval(h: IterationHeadline) -> str:
    return f"{pp(h.gain)} [{pp(h.low).removesuffix(' pp')}, {pp(h.high)}]"


def history_section(points: Sequence[IterationHeadline], pl: Any) -> Safe:
    """Plot and table, one row per iteration; the last row is this one (its version is not registered yet)."""
    if not points:
        return section("iterations", "Iterations", note("No iteration history was given."))
    k = points[-1].k
    modes = list(dict.fromkeys(m for h in points for m in h.candidate.modes))
    body: list[object] = []
    if len(points) == 1:
        body.append(note("The tracking store holds no earlier iteration: this is the first one recorded."))
    body.append(pl.add(HISTORY_PLOT, plots.iteration_history(points), f"pass^{k} and failure modes by iteration"))
    rows = [
        [
            h.iteration,
            h.baseline,
            pct(h.champion.pass_hat_k),
            pct(h.candidate.pass_hat_k),
            _interval(h),
            pp(h.mde) if h.mde is not None else "—",
            pct(h.candidate.pass_at_1),
            *[pct(h.candidate.modes.get(m)) for m in modes],
            h.outcome_word if i < len(points) - 1 else f"{h.outcome} (this iteration)",
        ]
        for i, h in enumerate(points)
    ]
    headers = [
        "iteration",
        "started from",
        f"champion pass^{k}",
        f"candidate pass^{k}",
        "gain [interval]",
        "detectable",
        "candidate pass@1",
        *[m.replace("_", " ") for m in modes],
        "gate",
    ]
    body.append(table(headers, rows))
    return section("iterations", "Iterations", *body)
