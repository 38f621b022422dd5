"""The gate's decision as the report shows it, read leniently from gate.json.

The report explains a decision; it does not make one, so it reads whatever gate.json states: the decision
(`promote` true/false, or a `decision` word), the reasons, the margin, and every interval it finds (a mapping
with low/high bounds, or a [low, high] pair under an `intervals` key or a key ending in `interval`/`ci`).
The headline interval is the pass^k difference when there is one. A gate.json from `agentloop gate` also
says what the gate could have seen: its outcome (promote, block or inconclusive), the minimum detectable
effect at its power, for an inconclusive outcome the held-out size that would resolve it, and pass^k compared
apart over the 'act' and the 'refuse' tasks.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.report.inputs import ReportInputError

_YES = {"promote", "promoted", "pass", "passed", "accept", "accepted", "go"}
_NO = {"block", "blocked", "reject", "rejected", "hold", "fail", "failed", "no-go", "keep"}
_LOW, _HIGH = ("low", "lower", "ci_low", "lo"), ("high", "upper", "ci_high", "hi")
_OUTCOMES = ("promote", "block", "inconclusive")
_EST = ("estimate", "diff", "delta", "mean", "point", "value", "observed")


@dataclass(frozen=True)
class IntervalView:
    name: str
    low: float
    high: float
    estimate: float | None = None


@dataclass
class GateView:
    promote: bool | None
    decision: str
    reasons: list[str] = field(default_factory=list)
    margin: float | None = None
    intervals: list[IntervalView] = field(default_factory=list)
    headline: str | None = None
    tests: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    outcome: str | None = None  # promote, block or inconclusive
    mde: float | None = None  # the true gain promoted with probability `power`
    power: float | None = None
    min_effect: float | None = None
    tasks_needed: int | None = None
    by_expected: dict[str, Any] = field(default_factory=dict)  # pass^k over act / refuse tasks apart

    @property
    def sensitivity(self) -> str | None:
        """One sentence on what the gate could have seen; None for a gate.json without an MDE."""
        if self.mde is None or self.power is None:
            return None
        text = (
            f"It could have seen a true gain of {self.mde:+.3f} or more "
            f"(minimum detectable effect at {self.power:.0%} power)"
        )
        if self.min_effect is not None and self.margin is not None:
            wanted = self.margin + self.min_effect
            text += f"; it should see {wanted:+.3f} (margin + min_effect)"
            if self.mde > wanted and self.tasks_needed is not None:
                text += f", which takes about {self.tasks_needed} held-out tasks"
        return text + "."

    @property
    def primary(self) -> IntervalView | None:
        """The pass^k difference interval if present, else the first interval."""
        for needle in ("pass_hat", "pass^", "primary", "diff"):
            hit = next((iv for iv in self.intervals if needle in iv.name.lower()), None)
            if hit:
                return hit
        return self.intervals[0] if self.intervals else None


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        return None
    return float(x)


def _first(d: dict, keys: tuple[str, ...]) -> float | None:
    return next((v for k in keys if (v := _num(d.get(k))) is not None), None)


def _pair(x: Any) -> tuple[float, float] | None:
    if isinstance(x, list | tuple) and len(x) == 2 and all(_num(v) is not None for v in x):
        return float(x[0]), float(x[1])
    return None


def _walk(obj: Any, path: str, out: list[IntervalView], depth: int = 0) -> None:
    if depth > 4 or not isinstance(obj, dict):
        return
    low, high = _first(obj, _LOW), _first(obj, _HIGH)
    if path and low is not None and high is not None:
        out.append(IntervalView(path, low, high, _first(obj, _EST)))
    for key, value in obj.items():
        name = f"{path}.{key}" if path else str(key)
        pair = _pair(value)
        if pair and (path.split(".")[-1] == "intervals" or key.endswith(("interval", "_ci", "ci"))):
            out.append(IntervalView(name, pair[0], pair[1], _first(obj, _EST) if key.endswith("interval") else None))
        elif isinstance(value, dict):
            _walk(value, name, out, depth + 1)


def _find_number(obj: Any, key: str, depth: int = 0) -> float | None:
    if depth > 4 or not isinstance(obj, dict):
        return None
    if (v := _num(obj.get(key))) is not None:
        return v
    return next((v for x in obj.values() if (v := _find_number(x, key, depth + 1)) is not None), None)


def _from_decision(data: dict[str, Any]) -> GateView | None:
    """The exact reading of a gate.json written by `agentloop gate`; None when it is not one."""
    try:
        from pydantic import ValidationError

        from pipeline.gate import GateDecision
    except ImportError:  # the gate package is optional for reading
        return None
    try:
        d = GateDecision.model_validate(data)
    except ValidationError:
        return None
    p = d.pass_hat_k
    name = f"pass^{p.k} diff"
    vs = (
        f"candidate {p.candidate:.3f} vs champion {p.champion:.3f}"
        if p.champion is not None
        else (f"candidate {p.candidate:.3f} (no champion yet)")
    )
    headline = (
        f"pass^{p.k}: {vs}; difference {p.diff:+.3f}, {p.confidence:.0%} interval "
        f"[{p.low:+.3f}, {p.high:+.3f}], margin {p.margin:+.3f}"
    )
    return GateView(
        promote=d.promote,
        decision=d.outcome,
        reasons=list(d.reasons),
        margin=p.margin,
        intervals=[IntervalView(name, p.low, p.high, p.diff)],
        headline=headline,
        tests=[t.model_dump(mode="json") for t in d.tests],
        raw=data,
        outcome=d.outcome,
        mde=p.mde,
        power=p.power,
        min_effect=p.min_effect,
        tasks_needed=p.tasks_needed,
        by_expected={side: c.model_dump(mode="json") for side, c in d.by_expected.items()},
    )


def gate_view(data: dict[str, Any]) -> GateView:
    """Interpret a parsed gate.json: exactly when `agentloop gate` wrote it, leniently otherwise."""
    exact = _from_decision(data)
    if exact is not None:
        return exact
    promote: bool | None = data["promote"] if isinstance(data.get("promote"), bool) else None
    decision = data.get("decision")
    if isinstance(decision, bool):
        promote, decision = (decision if promote is None else promote), None
    word = str(decision).strip().lower() if decision is not None else ""
    if promote is None and word in _YES | _NO:
        promote = word in _YES
    outcome = data.get("outcome") if data.get("outcome") in _OUTCOMES else None
    if outcome == "inconclusive" and promote is None:
        promote = False
    reasons = data.get("reasons") or []
    if not isinstance(reasons, list):
        reasons = [reasons]
    intervals: list[IntervalView] = []
    _walk(data, "", intervals)
    return GateView(
        promote=promote,
        decision=str(decision)
        if decision is not None
        else ("promote" if promote else "block" if promote is False else "?"),
        reasons=[r if isinstance(r, str) else json.dumps(r, sort_keys=True) for r in reasons],
        margin=_find_number(data, "margin"),
        intervals=list(dict.fromkeys(intervals)),
        raw=data,
        outcome=outcome,
        mde=_find_number(data, "mde"),
        power=_find_number(data, "power"),
        min_effect=_find_number(data, "min_effect"),
    )


def read_gate(path: Path) -> GateView:
    path = Path(path)
    if not path.exists():
        raise ReportInputError(f"{path}: gate file not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ReportInputError(f"{path}: not JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise ReportInputError(f"{path}: not JSON (not UTF-8 text; a binary file?)") from None
    if not isinstance(data, dict):
        raise ReportInputError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return gate_view(data)


def check_gate_matches(gate: GateView, gate_path: Path, baseline: Path, candidate: Path, tasks: Path) -> None:
    """A gate.json that records its inputs (as `agentloop gate` writes it) must be about these runs and tasks:
    the sha256 of each file it re-graded must equal the file's now, or the report would show another decision."""
    from pipeline.gate import sha256_file

    inputs = gate.raw.get("inputs")
    if not isinstance(inputs, dict):
        return
    expected = [
        ("candidate", _digest(inputs.get("candidate")), Path(candidate) / "trajectories.jsonl"),
        ("champion", _digest(inputs.get("champion")), Path(baseline) / "trajectories.jsonl"),
        ("tasks", inputs.get("tasks_sha256"), Path(tasks)),
    ]
    for role, digest, file in expected:
        if isinstance(digest, str) and file.exists() and sha256_file(file) != digest:
            raise ReportInputError(
                f"{gate_path}: the gate decided on another {role} file than {file} (sha256 {digest[:12]}… recorded,"
                f" {sha256_file(file)[:12]}… now); run the gate again on these runs"
            )


def _digest(run: Any) -> str | None:
    return run.get("trajectories_sha256") if isinstance(run, dict) else None
