"""A measure run directory, loaded back for the report: summary, trajectories, verdicts and analyses by trial.

The report reads what `agentloop measure` wrote (metrics.json, trajectories.jsonl, verdicts.jsonl) and nothing
else; a missing or malformed file is a `ReportInputError` naming the file and line.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from pipeline.errors import InputError
from pipeline.grading import FailureAnalysis, Verdict
from pipeline.metrics import MeasureSummary
from pipeline.rollout import Trajectory

TrialKey = tuple[str, int]


class ReportInputError(InputError, ValueError):
    """A report input (run directory, gate.json, task file) that is missing or cannot be read."""


@dataclass
class RunData:
    """One measured agent: its summary and every graded trial, keyed by (task id, trial)."""

    path: Path
    summary: MeasureSummary
    trajectories: dict[TrialKey, Trajectory] = field(default_factory=dict)
    verdicts: dict[TrialKey, Verdict] = field(default_factory=dict)
    analyses: dict[TrialKey, FailureAnalysis] = field(default_factory=dict)
    verdict: str = "strict"

    @property
    def agent(self) -> str:
        return self.summary.agent

    def outcome(self, key: TrialKey) -> bool | None:
        """True/False for a graded trial; None for an infrastructure error or a trial without a verdict."""
        v = self.verdicts.get(key)
        return None if v is None or v.infra_error else v.outcome(self.verdict)

    def trials_of(self, task_id: str) -> list[int]:
        return sorted(t for (tid, t) in self.verdicts if tid == task_id)

    def counts(self) -> dict[str, tuple[int, int]]:
        """task id → (passes, valid trials)."""
        out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for key in self.verdicts:
            o = self.outcome(key)
            out[key[0]]  # every task gets a row, even with only infrastructure errors
            if o is not None:
                out[key[0]][0] += o
                out[key[0]][1] += 1
        return {k: (c, n) for k, (c, n) in sorted(out.items())}


def _jsonl(path: Path) -> list[dict]:
    if not path.exists():
        raise ReportInputError(f"{path}: file not found (is this a measure run directory?)")
    rows = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ReportInputError(f"{path}:{i}: not JSON ({exc.msg})") from None
    return rows


def load_summary(path: Path) -> MeasureSummary:
    """The metrics.json of a run directory (or the file itself)."""
    file = path / "metrics.json" if path.is_dir() else path
    if not file.exists():
        raise ReportInputError(f"{file}: file not found (is this a measure run directory?)")
    try:
        return MeasureSummary.model_validate_json(file.read_text())
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ReportInputError(f"{file}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def load_run(path: Path, verdict: str = "strict") -> RunData:
    """Load a measure run directory written by `pipeline.measure.measure`; trials pass under `verdict`."""
    path = Path(path)
    if not path.is_dir():
        raise ReportInputError(f"{path}: not a directory (expected a measure run directory)")
    run = RunData(path=path, summary=load_summary(path), verdict=verdict)
    for i, row in enumerate(_jsonl(path / "trajectories.jsonl"), 1):
        try:
            t = Trajectory.model_validate(row)
        except ValidationError as exc:
            raise ReportInputError(f"{path / 'trajectories.jsonl'}:{i}: {exc.errors()[0]['msg']}") from None
        run.trajectories[(t.task_id, t.trial)] = t
    for i, row in enumerate(_jsonl(path / "verdicts.jsonl"), 1):
        if not isinstance(row, dict):
            raise ReportInputError(f"{path / 'verdicts.jsonl'}:{i}: expected a JSON object")
        try:
            v = Verdict.model_validate(row.get("verdict", row))
            a = FailureAnalysis.model_validate(row["analysis"]) if row.get("analysis") else None
        except (ValidationError, TypeError) as exc:
            msg = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            raise ReportInputError(f"{path / 'verdicts.jsonl'}:{i}: {msg}") from None
        if verdict == "tau2" and v.tau2 is None and not v.infra_error:
            raise ReportInputError(
                f"{path / 'verdicts.jsonl'}:{i}: no τ²-compatible reward to report on (verdict tau2)"
            )
        run.verdicts[(v.task_id, v.trial)] = v
        if a is not None:
            run.analyses[(v.task_id, v.trial)] = a
    _check_complete(run)
    return run


def _check_complete(run: RunData) -> None:
    """Every trial metrics.json counts must have its trajectory and verdict: a file emptied, cut short or copied
    from another run would otherwise be reported beside numbers it does not hold."""
    s = run.summary
    want = s.tasks * s.trials_per_task
    for name, got in (("trajectories.jsonl", run.trajectories), ("verdicts.jsonl", run.verdicts)):
        if len(got) != want:
            raise ReportInputError(
                f"{run.path / name}: {len(got)} trials, but metrics.json counts {s.tasks} tasks × {s.trials_per_task}"
                f" trials = {want} (the file is empty, truncated or from another run; measure again)"
            )
    if set(run.trajectories) != set(run.verdicts):
        key = sorted(set(run.trajectories) ^ set(run.verdicts))[0]
        raise ReportInputError(
            f"{run.path}: trajectories.jsonl and verdicts.jsonl hold different trials (task {key[0]!r} trial"
            f" {key[1]} is in one only)"
        )
