"""pass@1 and pass^k per task template: where in the task mix an agent passes, and where a change came from.

A gain over the whole mix can be one template learned and the rest untouched; the split by template shows which.
Tasks without a template (imported ones) fall under one row, `(none)`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from pydantic import Field

from pipeline.metrics.passk import pass_hat_k
from pipeline.strict import Strict

NO_TEMPLATE = "(none)"


class TemplateFigures(Strict):
    """One template's tasks and their pass figures (mean over its tasks with at least k valid trials)."""

    tasks: int = Field(description="Tasks of this template.")
    pass_at_1: float | None = Field(description="Mean per-task pass rate; None: no valid trial.")
    pass_hat_k: float | None = Field(description="Mean per-task pass^k; None: no task has k valid trials.")


def by_template(
    counts: Mapping[str, tuple[int, int]], templates: Mapping[str, str | None], k: int
) -> dict[str, TemplateFigures]:
    """Template → figures, from task id → (passes, valid trials) and task id → template; sorted by template."""
    groups: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for task, c in counts.items():
        groups[templates.get(task) or NO_TEMPLATE].append(c)
    out: dict[str, TemplateFigures] = {}
    for name in sorted(groups):
        rows = groups[name]
        rated = [p / n for p, n in rows if n]
        hats = [pass_hat_k(p, n, k) for p, n in rows if n >= k]
        out[name] = TemplateFigures(
            tasks=len(rows),
            pass_at_1=round(sum(rated) / len(rated), 6) if rated else None,
            pass_hat_k=round(sum(hats) / len(hats), 6) if hats else None,
        )
    return out
