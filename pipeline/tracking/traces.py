"""Graded trials as MLflow traces, logged in bulk from a measurement's saved files (never during the measure).

Each trial becomes one trace (pipeline.tracking.trace_spans), tagged with task, trial, template, iteration and
run, linked to the stage run that measured it, grouped by task into a session (`mlflow.trace.session` =
`iter-001/baseline/<task>`), with the verdict as feedback (pipeline.tracking.verdict_feedback). A batch is
keyed by what it was made from, so a rerun of `promote` over the same files adds no duplicates.

MLflow's tracing writes through its global tracking URI; it is set for the duration of a batch and restored.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.grading.failure_modes import FailureAnalysis
from pipeline.grading.verdict import Verdict
from pipeline.rollout.trajectory import Trajectory
from pipeline.tracking.trace_spans import SpanSpec, trial_spans
from pipeline.tracking.verdict_feedback import FeedbackSpec, verdict_feedback

log = logging.getLogger(__name__)

SESSION = "mlflow.trace.session"
USER = "mlflow.trace.user"
SOURCE_RUN = "mlflow.sourceRun"
BATCH_TAG = "agentloop.trace_batch"
SPAN_BATCH = 512
FLUSH_EVERY = 100  # traces; ~16 spans each stays below MLflow's span queue (2048) and write queue (1000)
EXPORT_ENV = {
    "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "true",
    "MLFLOW_USE_BATCH_SPAN_PROCESSOR": "true",
    "MLFLOW_ASYNC_TRACE_LOGGING_MAX_SPAN_BATCH_SIZE": str(SPAN_BATCH),
}


class TraceInputError(ValueError):
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


@contextmanager
def tracking_uri(uri: str) -> Iterator[None]:
    """MLflow's global tracking URI (which tracing exports to) set to ``uri`` for the block, then restored.

    Inside, spans are exported in batches of `SPAN_BATCH` by MLflow's background writer (one store call per
    batch instead of one per span); `log_trial_traces` drains the queues every `FLUSH_EVERY` traces, since
    MLflow drops what overflows them."""
    import mlflow

    before = {k: os.environ.get(k) for k in ("MLFLOW_TRACKING_URI", *EXPORT_ENV)}
    os.environ.update(EXPORT_ENV)
    mlflow.set_tracking_uri(uri)  # also rebuilds the tracer provider, which reads EXPORT_ENV
    try:
        yield
    finally:
        mlflow.flush_trace_async_logging()
        for k in EXPORT_ENV:
            if before[k] is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = before[k]
        mlflow.set_tracking_uri(before["MLFLOW_TRACKING_URI"])  # None unsets it again


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


def _start(spec: SpanSpec, parent, **kw):
    import mlflow
    from mlflow.entities import SpanStatusCode

    span = mlflow.start_span_no_context(
        spec.name,
        span_type=spec.span_type,
        parent_span=parent,
        inputs=spec.inputs,
        attributes={k: v for k, v in spec.attributes.items() if v is not None},
        start_time_ns=spec.start_ns,
        **kw,
    )
    if spec.outputs is not None:
        span.set_outputs(spec.outputs)
    return span, (SpanStatusCode.ERROR if spec.error else SpanStatusCode.OK)


def _log_trace(
    specs: list[SpanSpec], feedback: list[FeedbackSpec], tags: dict[str, str], metadata: dict[str, str], exp: str
) -> str:
    """Spans, then the feedback while the root is the active span: MLflow then keeps the assessments with the
    trace and writes them in the same store call as the trace itself (not one call each)."""
    from mlflow.tracing.provider import safe_set_span_in_context

    root, root_status = _start(specs[0], None, tags=tags, metadata=metadata, experiment_id=exp)
    live = [root]
    for spec in specs[1:]:
        span, status = _start(spec, live[spec.parent or 0])
        live.append(span)
        span.end(status=status, end_time_ns=spec.end_ns)
    with safe_set_span_in_context(root):
        for fb in feedback:
            _log_feedback(root.trace_id, fb)
    root.end(status=root_status, end_time_ns=specs[0].end_ns)
    return root.trace_id


def _log_feedback(trace_id: str, fb: FeedbackSpec) -> None:
    import mlflow
    from mlflow.entities import AssessmentError, AssessmentSource

    mlflow.log_feedback(
        trace_id=trace_id,
        name=fb.name,
        value=fb.value,
        source=AssessmentSource(source_type=fb.source_type, source_id=fb.source_id),
        error=AssessmentError(error_code=fb.error_code, error_message=fb.rationale) if fb.error_code else None,
        rationale=None if fb.error_code else fb.rationale,
        metadata=fb.metadata or None,
    )


def batch_trace_ids(experiment_id: str, batch: str) -> list[str]:
    """The ids of the traces already logged for ``batch`` (under the global tracking URI)."""
    from mlflow import MlflowClient

    ids, token = [], None
    while True:
        page = MlflowClient().search_traces(
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
    with tracking_uri(uri):
        import mlflow

        already = batch_trace_ids(experiment_id, batch)
        if len(already) >= len(trials):
            log.info("traces of %s (%s) already logged: %d", run_dir, role, len(already))
            return {"traces": len(already), "logged": 0, "seconds": time.perf_counter() - t0, "batch": batch}
        if already:  # a batch cut short earlier: replaced whole, so no trial is there twice
            log.warning("traces of %s: %d of %d there from before; logging again", run_dir, len(already), len(trials))
            mlflow.MlflowClient().delete_traces(experiment_id, trace_ids=already)
        now = base_s if base_s is not None else time.time()
        for i, trial in enumerate(trials, start=1):
            traj = trial.trajectory
            tags = trace_tags(trial, template=templates.get(traj.task_id), iteration=iteration, role=role, batch=batch)
            metadata = {
                SESSION: f"iter-{iteration:03d}/{role}/{traj.task_id}",
                USER: f"{traj.user}:{traj.persona}" if traj.persona else traj.user,
                SOURCE_RUN: run_id,
            }
            feedback = verdict_feedback(trial.verdict, trial.analysis)
            _log_trace(trial_spans(traj, trial.timing, now), feedback, tags, metadata, experiment_id)
            if i % FLUSH_EVERY == 0:
                mlflow.flush_trace_async_logging()
        mlflow.flush_trace_async_logging()
        logged = len(batch_trace_ids(experiment_id, batch))
    seconds = time.perf_counter() - t0
    if logged < len(trials):
        raise RuntimeError(f"traces of {run_dir}: only {logged} of {len(trials)} reached the store")
    log.info("logged %d traces of %s (%s) in %.1f s", len(trials), run_dir, role, seconds)
    return {"traces": logged, "logged": len(trials), "seconds": seconds, "batch": batch}
