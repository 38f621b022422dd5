"""The small metrics files `dvc metrics show` / `dvc metrics diff` read, committed with each iteration.

runs/*/metrics.json hold every number of a measurement, but they live in git-ignored run directories, so no
commit has them and `dvc metrics diff` could load nothing for HEAD. These files are the headline alone, in
git: `metrics/baseline.json` and `metrics/candidate.json` (pass@1, pass^k for each k, the same over the tasks whose
gold changes the world and over those whose gold changes nothing, the failure-mode rates, the spend per success)
and `metrics/gate.json` (the outcome and the pass^k comparison, overall and split the same way). Numbers are shares
(0..1) and plain scalars only, so every value DVC prints is one it can diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.metrics import MeasureSummary
from pipeline.outputs import atomic_write


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def measure_metrics(summary: MeasureSummary) -> dict[str, Any]:
    """A measurement's headline: pass@1, pass^k by k, failure-mode shares of trials, spend per success."""
    cost = summary.cost
    spend = (
        {f"cost_per_success_{cost.currency}": _r(cost.cost_per_success)}
        if cost.priced
        else {"tokens_per_success": _r(cost.tokens_per_success)}
    )
    return {
        "pass@1": _r(summary.pass_at_1),
        "pass^k": {k: _r(v) for k, v in summary.pass_hat_k.items()},
        **_by_expected(summary),
        "failure_modes": {m: _r(rate.trials) for m, rate in summary.failure_modes.items()},
        **{k: v for k, v in spend.items() if v is not None},
        "tasks": summary.tasks,
        "trials_per_task": summary.trials_per_task,
        "infra_errors": summary.infra_errors,
    }


def _by_expected(summary: MeasureSummary) -> dict[str, Any]:
    """pass@1 and pass^k over the 'act' and the 'refuse' tasks apart (nothing for a run that does not split)."""
    if not summary.by_expected:
        return {}
    split: dict[str, dict[str, Any]] = {}
    for side, s in summary.by_expected.items():
        split[side] = {
            "tasks": s.tasks,
            "pass@1": _r(s.pass_at_1),
            "pass^k": {k: _r(v) for k, v in s.pass_hat_k.items()},
        }
        split[side] = {k: v for k, v in split[side].items() if v not in (None, {})}
    return {"by_expected": split}


def _gate_split(decision: dict[str, Any]) -> dict[str, Any]:
    split: dict[str, dict[str, Any]] = {}
    for side, c in (decision.get("by_expected") or {}).items():
        numbers = {
            "tasks": c.get("tasks"),
            "champion": _r(c.get("champion")),
            "candidate": _r(c.get("candidate")),
            "gain": _r(c.get("diff")),
            "low": _r(c.get("low")),
            "high": _r(c.get("high")),
        }
        split[side] = {k: v for k, v in numbers.items() if v is not None}
    return {"by_expected": split} if split else {}


def gate_metrics(decision: dict[str, Any]) -> dict[str, Any]:
    """The gate's outcome and its pass^k comparison (gain = candidate − champion, its interval, the MDE), overall
    and over the 'act' and the 'refuse' tasks apart."""
    ph = decision["pass_hat_k"]
    numbers = {
        "k": ph["k"],
        "champion": _r(ph.get("champion")),
        "candidate": _r(ph["candidate"]),
        "gain": _r(ph["diff"]),
        "low": _r(ph["low"]),
        "high": _r(ph["high"]),
        "mde": _r(ph.get("mde")),
    }
    return {
        "outcome": decision["outcome"],
        "pass^k": {k: v for k, v in numbers.items() if v is not None},
        **_gate_split(decision),
    }


def write_metrics(path: Path, metrics: dict[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(metrics, indent=2) + "\n")
    return path
