"""Outcome tables: each task's valid trials reduced to counts, and the per-task values the gate's tests read.

A task also carries its expected outcome ('act': its gold changes the world; 'refuse': it changes nothing;
`pipeline.dataset.expected_outcome`), so that the gate can compare the two kinds apart and track pass^k over the
'act' tasks alone: an agent that never acts passes every 'refuse' task.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pipeline.dataset import EXPECTED, Expected
from pipeline.gate.config import ACT_PASS_HAT_K, PASS_AT_1
from pipeline.gate.errors import GateInputError
from pipeline.metrics import pass_hat_k, task_clusters

# Below this many template clusters the bootstrap resamples tasks: a handful of clusters drawn with replacement
# gives an interval with (next to) no spread.
MIN_CLUSTERS = 5
PASS_HAT_K = "pass^k"


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """One task's valid trials reduced to counts (infrastructure-error trials already left out)."""

    template: str | None
    n: int
    passes: int
    modes: Mapping[str, int] = field(default_factory=dict)  # mode -> valid trials showing it
    expected: Expected | None = None  # act / refuse; None: not known
    saw_tools: int | None = None  # valid trials in which a tool output appeared; None: not known

    def __post_init__(self) -> None:
        if not 0 <= self.passes <= self.n:
            raise GateInputError(f"passes={self.passes} must be within 0..n={self.n}")
        bad = {m: c for m, c in self.modes.items() if not 0 <= c <= self.n - self.passes}
        if bad:
            raise GateInputError(f"mode counts {bad} must be within 0..failed trials ({self.n - self.passes})")
        if self.saw_tools is not None and not 0 <= self.saw_tools <= self.n:
            raise GateInputError(f"saw_tools={self.saw_tools} must be within 0..n={self.n}")
        if self.expected is not None and self.expected not in EXPECTED:
            raise GateInputError(f"expected={self.expected!r} must be one of {list(EXPECTED)} or None")


Table = Mapping[str, TaskOutcome]


def of_expected(table: Table, expected: Expected) -> dict[str, TaskOutcome]:
    """The tasks of `table` with this expected outcome."""
    return {t: o for t, o in table.items() if o.expected == expected}


def per_task(table: Table, metric: str, k: int) -> dict[str, float]:
    """Per-task values: 'pass^k', 'act pass^k' (pass^k of the 'act' tasks only), 'pass@1' (pass rate) or a failure
    mode's share of valid trials."""
    if metric == PASS_HAT_K:
        return {t: pass_hat_k(o.passes, o.n, k) for t, o in table.items()}
    if metric == ACT_PASS_HAT_K:
        return per_task(of_expected(table, "act"), PASS_HAT_K, k)
    if metric == PASS_AT_1:
        return {t: o.passes / o.n for t, o in table.items()}
    return {t: o.modes.get(metric, 0) / o.n for t, o in table.items()}


def resampling_unit(table: Table) -> tuple[dict[str, str | None] | None, int]:
    """(clusters for the bootstrap, number of template clusters): the templates, or None (resample tasks) when
    the tasks form fewer than MIN_CLUSTERS clusters and some cluster holds more than one task.

    >>> one = TaskOutcome("cancel", 2, 1)
    >>> resampling_unit({"a": one, "b": one, "c": one})
    (None, 1)
    >>> resampling_unit({t: TaskOutcome(t, 2, 1) for t in "abcde"})[1]
    5
    """
    clusters = {t: o.template for t, o in table.items()}
    n = len(task_clusters(list(table), clusters))
    return (None if n < MIN_CLUSTERS and n < len(table) else clusters), n
