"""Graded trials as MLflow traces, logged in bulk from a measurement's saved files (never during the measure).

Each trial becomes one trace (pipeline.tracking.trace_spans), tagged with task, trial, template, iteration and
run, linked to the stage run that measured it, grouped by task into a session (`mlflow.trace.session` =
`iter-001/baseline/<task>`), with the verdict as feedback (pipeline.tracking.verdict_feedback). A batch is
keyed by what it was made from, so a rerun of `promote` over the same files adds no duplicates. The traces go
to the store in bulk (pipeline.tracking.trace_writer), not through MLflow's live-tracing client.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.errors import InputError, TrackingError
from pipeline.grading import FailureAnalysis, Verdict
from pipeline.rollout import Trajectory
from pipeline.tracking.trace_spans import trial_spans
from pipeline.tracking.trace_writer import TRACES_PER_CALL, BuiltTrace, build_trace, bulk_writes, write_traces
from pipeline.tracking.verdict_feedback import verdict_feedback

log = logging.getLogger(__name__)

SESSION = "mlflow.trace.session"
USER = "mlflow.trace.user"
SOURCE_RUN = "mlflow.sourceRun"
BATCH_TAG = "agentloop.trace_batch"


class TraceInputError(InputError, ValueError):
    """A measurement's files that cannot be read as trials; the message names the file and line."""


class Trial(BaseModel):
    model_config = ConfigDict(extra="forbid")

    trajectory: Trajectory
    verdict: Verdict
    analysis: FailureAnalysis | None = None
    timing: dict[str, Any] | None = None


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open() as fh:
        for i, line in enumerate(fh, start=1):
            if line.strip():
                yield i, line


def read_trials(run_dir: str | Path) -> list[Trial]:
    """trajectories.jsonl + verdicts.jsonl (same order, as `measure` writes them) + timings.jsonl if present."""
    run_dir = Path(run_dir)
    paths = {name: run_dir / f"{name}.jsonl" for name in ("trajectories", "verdicts", "timings")}
    for name in ("trajectories", "verdicts"):
        if not paths[name].exists():
            raise TraceInputError(f"{paths[name]}: file not found")
    timings: dict[tuple[str, int], dict] = {}
    if paths["timings"].exists():
        for _, line in _lines(paths["timings"]):
            t = json.loads(line)
            timings[(t["task_id"], int(t["trial"]))] = t
    trials = []
    verdicts = _lines(paths["verdicts"])
    for lineno, line in _lines(paths["trajectories"]):
        try:
            traj = Trajectory.model_validate_json(line)
        except ValidationError as exc:
            raise TraceInputError(f"{paths['trajectories']}:{lineno}: {exc.errors()[0]['msg']}") from None
        vline, vtext = next(verdicts, (None, None))
        if vtext is None:
            raise TraceInputError(f"{paths['verdicts']}: ends before trajectory line {lineno}")
        try:
            row = json.loads(vtext)
            verdict = Verdict.model_validate(row["verdict"])
            analysis = FailureAnalysis.model_validate(row["analysis"]) if row.get("analysis") else None
        except (ValueError, KeyError, ValidationError) as exc:
            raise TraceInputError(f"{paths['verdicts']}:{vline}: not a verdict record ({exc})") from None
        if (verdict.task_id, verdict.trial) != (traj.task_id, traj.trial):
            raise TraceInputError(
                f"{paths['verdicts']}:{vline}: verdict of {verdict.task_id} #{verdict.trial} beside trajectory "
                f"{traj.task_id} #{traj.trial}"
            )
        trials.append(
            Trial(trajectory=traj, verdict=verdict, analysis=analysis, timing=timings.get((traj.task_id, traj.trial)))
        )
    return trials


def batch_key(run_dir: str | Path, role: str, run_key: str) -> str:
    """What a batch was made from: the measurement's trajectory and verdict bytes, its role and the iteration."""
    h = hashlib.sha256(f"{role}\0{run_key}\0".encode())
    for name in ("trajectories.jsonl", "verdicts.jsonl"):
        with (Path(run_dir) / name).open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def trace_tags(trial: Trial, *, template: str | None, iteration: int, role: str, batch: str) -> dict[str, str]:
    a, v = trial.analysis, trial.verdict
    outcome = "infra_error" if v.infra_error else ("pass" if v.passed else "fail")
    tags = {
        "agentloop.task": trial.trajectory.task_id,
        "agentloop.trial": str(trial.trajectory.trial),
        "agentloop.template": template or "",
        "agentloop.iteration": str(iteration),
        "agentloop.run": role,
        "agentloop.outcome": outcome,
        "agentloop.failure_modes": ",".join(a.modes) if a else "",
        "agentloop.dominant_mode": (a.dominant or "") if a else "",
        BATCH_TAG: batch,
    }
    return {k: v for k, v in tags.items() if v != ""}


def batch_trace_ids(client, experiment_id: str, batch: str) -> list[str]:
    """The ids of the traces already logged for ``batch``."""
    ids, token = [], None
    while True:
        page = client.search_traces(
            locations=[experiment_id],
            filter_string=f"tags.`{BATCH_TAG}` = '{batch}'",
            max_results=500,
            page_token=token,
            include_spans=False,
        )
        ids += [t.info.trace_id for t in page]
        token = page.token
        if not token:
            return ids


def log_trial_traces(
    uri: str,
    experiment_id: str,
    run_id: str,
    run_dir: str | Path,
    *,
    role: str,
    iteration: int,
    run_key: str,
    templates: Mapping[str, str | None] | None = None,
    base_s: float | None = None,
) -> dict[str, Any]:
    """Every trial of the measurement in ``run_dir`` as a trace under ``run_id``; returns counts and seconds."""
    t0 = time.perf_counter()
    trials = read_trials(run_dir)
    batch = batch_key(run_dir, role, run_key)
    templates = templates or {}
    from mlflow import MlflowClient
    from mlflow.tracking._tracking_service.utils import _get_store

    client, store = MlflowClient(uri), _get_store(uri)
    already = batch_trace_ids(client, experiment_id, batch)
    if len(already) >= len(trials):
        log.info("traces of %s (%s) already logged: %d", run_dir, role, len(already))
        return {"traces": len(already), "logged": 0, "seconds": time.perf_counter() - t0, "batch": batch}
    if already:  # a batch cut short earlier: replaced whole, so no trial is there twice
        log.warning("traces of %s: %d of %d there from before; logging again", run_dir, len(already), len(trials))
        client.delete_traces(experiment_id, trace_ids=already)
    now = base_s if base_s is not None else time.time()
    chunk: list[BuiltTrace] = []
    with bulk_writes(store):
        for i, trial in enumerate(trials):
            traj = trial.trajectory
            tags = trace_tags(trial, template=templates.get(traj.task_id), iteration=iteration, role=role, batch=batch)
            metadata = {
                SESSION: f"iter-{iteration:03d}/{role}/{traj.task_id}",
                USER: f"{traj.user}:{traj.persona}" if traj.persona else traj.user,
                SOURCE_RUN: run_id,
            }
            specs = trial_spans(traj, trial.timing, now)
            feedback = verdict_feedback(trial.verdict, trial.analysis)
            chunk.append(
                build_trace(f"{batch}/{i}", specs, feedback, experiment_id=experiment_id, tags=tags, metadata=metadata)
            )
            if len(chunk) == TRACES_PER_CALL or i == len(trials) - 1:
                write_traces(store, experiment_id, chunk)
                chunk = []
    logged = len(batch_trace_ids(client, experiment_id, batch))
    seconds = time.perf_counter() - t0
    if logged < len(trials):
        raise TrackingError(f"traces of {run_dir}: only {logged} of {len(trials)} reached the store")
    log.info("logged %d traces of %s (%s) in %.1f s", len(trials), run_dir, role, seconds)
    return {"traces": logged, "logged": len(trials), "seconds": seconds, "batch": batch}
