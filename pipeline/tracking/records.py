"""Turn the loop's records (params, a MeasureSummary, a gate decision) into MLflow metrics, params and tags.

Pure functions, so the names a user sees in `mlflow ui` are fixed here and tested without a store. Names use `/`
so the UI groups them (`pass_hat_k/4`, `failure_mode/invention/trials`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline.digest import sha256_json

if TYPE_CHECKING:
    from pipeline.metrics import MeasureSummary

MAX_PARAM_CHARS = 6000  # MLflow's limit on a param value
MAX_TAG_CHARS = 8000  # MLflow's limit on a tag value
_BAD = re.compile(r"[^/\w.\- :]")


def clean_key(key: str) -> str:
    """A metric, param or tag name MLflow accepts: other characters become `_`, no empty or `..` segments.

    >>> clean_key("dvc.stage.measure@baseline")
    'dvc.stage.measure_baseline'
    >>> clean_key("/a//b/")
    'a/b'
    """
    return "/".join(seg for seg in _BAD.sub("_", key).split("/") if seg and seg not in {".", ".."})


def _scalar(v: Any) -> str:
    if isinstance(v, str):
        return v
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def flatten_params(params: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """params.yaml sections as dotted keys (`gate.margin`), the way `dvc exp run -S` names them.

    >>> flatten_params({"gate": {"margin": 0.05, "ks": [1, 4]}, "seed": 3})
    {'gate.margin': '0.05', 'gate.ks': '[1,4]', 'seed': '3'}
    """
    out: dict[str, str] = {}
    for k, v in params.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(flatten_params(v, f"{key}."))
        else:
            out[clean_key(key)] = _scalar(v)[:MAX_PARAM_CHARS]
    return out


def params_digest(params: Mapping[str, Any]) -> str:
    """A short, order-independent fingerprint of a parameter set (what makes two iterations comparable).

    >>> params_digest({"a": 1, "b": {"c": 2}}) == params_digest({"b": {"c": 2}, "a": 1})
    True
    """
    return sha256_json(flatten_params(params), compact=False, ensure_ascii=True)[:10]


def _put(out: dict[str, float], key: str, value: float | int | bool | None) -> None:
    if value is None or isinstance(value, str):
        return
    x = float(value)
    if math.isfinite(x):
        out[clean_key(key)] = x


def summary_metrics(summary: MeasureSummary, prefix: str = "") -> dict[str, float]:
    """Every number of a measurement as a flat metric dict; None-valued cost ratios are left out, not zeroed."""
    m: dict[str, float] = {}
    p = prefix
    _put(m, f"{p}pass_at_1", summary.pass_at_1)
    for k, v in summary.pass_at_k.items():
        _put(m, f"{p}pass_at_k/{k}", v)
    for k, v in summary.pass_hat_k.items():
        _put(m, f"{p}pass_hat_k/{k}", v)
    for stat, (low, high) in summary.intervals.items():
        _put(m, f"{p}interval/{stat}/low", low)
        _put(m, f"{p}interval/{stat}/high", high)
    for b, v in summary.buckets.items():
        _put(m, f"{p}bucket/{b}", v)
    for mode, rate in summary.failure_modes.items():
        _put(m, f"{p}failure_mode/{mode}/trials", rate.trials)
        _put(m, f"{p}failure_mode/{mode}/tasks", rate.tasks)
    for mode, v in summary.dominant_modes.items():
        _put(m, f"{p}dominant_mode/{mode}", v)
    for sig, v in summary.signatures.items():
        _put(m, f"{p}signature/{sig}", v)
    for kind, rate in summary.diff_categories.items():
        _put(m, f"{p}diff/{kind}/trials", rate.trials)
        _put(m, f"{p}diff/{kind}/tasks", rate.tasks)
    for side, split in summary.by_expected.items():  # pass^k over the 'act' and the 'refuse' tasks apart
        _put(m, f"{p}by_expected/{side}/tasks", split.tasks)
        _put(m, f"{p}by_expected/{side}/pass_at_1", split.pass_at_1)
        for k, v in split.pass_hat_k.items():
            _put(m, f"{p}by_expected/{side}/pass_hat_k/{k}", v)
    _put(m, f"{p}looked_complete_share", summary.looked_complete_share)
    for name, v in summary.cost.model_dump(exclude={"currency"}).items():
        _put(m, f"{p}cost/{name}", v)
    for name in ("tasks", "trials_per_task", "valid_trials", "infra_errors"):
        _put(m, f"{p}{name}", getattr(summary, name))
    return m


def curve_metrics(summary: MeasureSummary) -> dict[str, list[tuple[int, float]]]:
    """pass@k and pass^k as step series (step = k), so the MLflow chart of one metric *is* the pass^k curve."""
    return {
        "pass_at_k": sorted((int(k), float(v)) for k, v in summary.pass_at_k.items()),
        "pass_hat_k": sorted((int(k), float(v)) for k, v in summary.pass_hat_k.items()),
    }


class GateRecord(BaseModel):
    """The part of a gate decision the tracker reads; the gate's own file may carry more (kept as extra)."""

    model_config = ConfigDict(extra="allow")

    promote: bool = Field(description="Whether the candidate may replace the champion.")
    interval: tuple[float, float] = Field(description="Confidence interval of candidate − champion pass^k.")
    reasons: list[str] = Field(default_factory=list, description="Why the gate decided as it did.")

    @classmethod
    def parse(cls, decision: Mapping[str, Any]) -> GateRecord:
        """Accept `interval` as [low, high] or {low, high}, or top-level `interval_low` / `interval_high`.

        >>> GateRecord.parse({"promote": True, "interval": {"low": 0.02, "high": 0.2}}).interval
        (0.02, 0.2)
        >>> GateRecord.parse({"promote": False, "pass_hat_k": {"low": -0.01, "high": 0.2}}).interval
        (-0.01, 0.2)
        """
        d = dict(decision)
        iv = d.get("interval")
        if isinstance(iv, Mapping):
            d["interval"] = (iv["low"], iv["high"])
        elif iv is None and "interval_low" in d:
            d["interval"] = (d.pop("interval_low"), d.pop("interval_high"))
        elif iv is None and isinstance(d.get("pass_hat_k"), Mapping):  # gate.json as pipeline.gate writes it
            ph = d.pop("pass_hat_k")
            d["interval"] = (ph["low"], ph["high"])
            for key in ("k", "candidate", "champion", "diff", "margin", "se", "mde", "tasks_needed"):
                if isinstance(ph.get(key), int | float):
                    d[f"pass_hat_k_{key}"] = ph[key]
        return cls.model_validate(d)


def gate_metrics(decision: Mapping[str, Any], prefix: str = "gate/") -> tuple[dict[str, float], dict[str, str]]:
    """(metrics, tags) for a gate decision: promote as 0/1, the interval, and any other top-level number.

    >>> m, t = gate_metrics({"promote": False, "interval": [-0.1, 0.2], "reasons": ["lower bound below margin"],
    ...                      "margin": 0.0})
    >>> m
    {'gate/promote': 0.0, 'gate/interval_low': -0.1, 'gate/interval_high': 0.2, 'gate/margin': 0.0}
    >>> t["agentloop.decision"], t["agentloop.gate_reasons"]
    ('blocked', 'lower bound below margin')
    """
    rec = GateRecord.parse(decision)
    m: dict[str, float] = {}
    _put(m, f"{prefix}promote", rec.promote)
    _put(m, f"{prefix}interval_low", rec.interval[0])
    _put(m, f"{prefix}interval_high", rec.interval[1])
    for k, v in (rec.model_extra or {}).items():
        if isinstance(v, int | float) and not isinstance(v, bool):
            _put(m, f"{prefix}{k}", v)
    split = (rec.model_extra or {}).get("by_expected")  # pass^k over the 'act' and the 'refuse' tasks apart
    for side, c in split.items() if isinstance(split, Mapping) else ():
        for key, v in c.items() if isinstance(c, Mapping) else ():
            if key in ("tasks", "candidate", "champion", "diff", "low", "high") and not isinstance(v, bool):
                _put(m, f"{prefix}by_expected/{side}/{key}", v if isinstance(v, int | float) else None)
    inconclusive = (rec.model_extra or {}).get("outcome") == "inconclusive"  # not promoted, and not shown worse
    tags = {
        "agentloop.decision": "promote" if rec.promote else "inconclusive" if inconclusive else "blocked",
        "agentloop.gate_reasons": "; ".join(rec.reasons)[:MAX_TAG_CHARS],
    }
    return m, tags
