"""pass^k split by expected outcome, as the report shows it: the 'act' tasks (their gold changes the world) apart
from the 'refuse' tasks (it changes nothing), which an agent that never acts passes; a pass^k gain made of the
latter alone is no gain at the job.

Read from the runs' metrics.json (`by_expected`) and the gate's gate.json (`by_expected`); a file written before
the split existed has none, and the report says so rather than showing zeros.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.dataset import EXPECTED, Expected
from pipeline.metrics import MeasureSummary, pp
from pipeline.report.html import Safe, join, note, num, pct, table, tag

WHAT = {"act": "the gold changes the world", "refuse": "the gold changes nothing"}
WHY = (
    "An agent that never acts passes every task whose gold changes nothing (a refusal), so pass^k is shown"
    " apart over the tasks whose gold changes the world (act) and those whose gold changes nothing (refuse):"
    " a gain made of refusals alone shows here."
)


def _hat(s: MeasureSummary, side: Expected, k: int) -> float | None:
    split = s.by_expected.get(side)
    return None if split is None else split.pass_hat_k.get(str(k))


def overview_rows(b: MeasureSummary, c: MeasureSummary, k: int) -> list[list[object]]:
    """Rows beside pass^k in the overview: pass^k over each side's tasks, baseline and candidate."""
    if not b.by_expected and not c.by_expected:
        return []
    rows: list[list[object]] = []
    for side in EXPECTED:
        vb, vc = _hat(b, side, k), _hat(c, side, k)
        split = c.by_expected.get(side) or b.by_expected.get(side)
        n = f", {split.tasks} tasks" if split is not None else ""
        change = pp(vc - vb) if vb is not None and vc is not None else ""
        rows.append([f"pass^{k} over {side} tasks ({WHAT[side]}{n})", pct(vb), pct(vc), change])
    return rows


def pass_table(b: MeasureSummary, c: MeasureSummary) -> Safe:
    """pass^k by k over each side's tasks, baseline and candidate, with their intervals."""
    if not b.by_expected and not c.by_expected:
        return note("The runs' metrics.json hold no split by expected outcome (written before it existed).")

    def hat(s: MeasureSummary, side: Expected, k: str) -> str:
        split = s.by_expected.get(side)
        if split is None or k not in split.pass_hat_k:
            return "—" if split is None or split.tasks else "no such tasks"
        lo, hi = split.intervals.get(f"pass_hat_{k}", [None, None])
        return f"{split.pass_hat_k[k]:.1%}" + (f" [{lo:.1%}, {hi:.1%}]" if lo is not None else "")

    ks = sorted({k for s in (b, c) for split in s.by_expected.values() for k in split.pass_hat_k}, key=int)
    rows = [[f"{side} ({WHAT[side]})", k, hat(b, side, k), hat(c, side, k)] for side in EXPECTED for k in ks]
    return join(
        [
            tag("h3", "pass^k by expected outcome"),
            note(WHY),
            table(["tasks", "k", "baseline pass^k [95%]", "candidate pass^k [95%]"], rows),
        ]
    )


def gate_table(split: Mapping[str, Any]) -> Safe:
    """The gate's pass^k comparison over each side's tasks (informational: not its criterion)."""
    rows = []
    for side in EXPECTED:
        c = split.get(side)
        if not isinstance(c, Mapping):
            continue
        if not c.get("tasks"):
            rows.append([side, 0, "—", "—", "—", "no such tasks among the held-out tasks"])
            continue
        low, high, diff = (c.get(key) for key in ("low", "high", "diff"))
        known = all(isinstance(x, float | int) for x in (low, high, diff))
        interval, change = (f"[{low:+.3f}, {high:+.3f}]", f"{diff:+.3f}") if known else ("—", "—")
        rows.append([side, c["tasks"], num(c.get("champion"), 3), num(c.get("candidate"), 3), change, interval])
    return join(
        [
            tag("h3", "pass^k over act and refuse tasks apart (shown, not the promotion criterion)"),
            note(WHY + " A significant drop on the act side blocks through the tracked metric 'act pass^k'."),
            table(["tasks", "n", "champion", "candidate", "diff", "interval"], rows),
        ]
    )
