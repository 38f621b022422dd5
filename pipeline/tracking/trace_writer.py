"""Finished traces written straight to the tracking store, many at a time.

MLflow's tracing client is built for live code: each span goes through an OpenTelemetry processor, and a trace's
info and its spans reach the store from two background queues, in separate calls per trace. Our trials are
already over when they are logged, so the trace is built whole here — its info (tags, metadata, previews, token
usage, the verdict as assessments) and its spans as MLflow `Span` entities — and written with the store's own
API: `start_trace` per trace (info and assessments in one call), then `log_spans` once for a chunk of traces.
The info is always written before the spans of the same trace, so no span can arrive for a trace the store
does not know yet (the race that made MLflow's writer drop spans).

On a sqlite store the batch runs with the database in WAL mode (kept: readers such as `mlflow ui` then never
block the writer) and `synchronous=NORMAL` on the writer's connections (for the batch only): a commit then no
longer waits for the disk, and a batch lost to a power cut is found short by the count check after it and
logged again whole.

Trace ids are derived from what the trace is (its batch and position), so a trace rebuilt from the same files
has the same id.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pipeline.tracking.trace_spans import SpanSpec
from pipeline.tracking.verdict_feedback import FeedbackSpec

log = logging.getLogger(__name__)

TRACES_PER_CALL = 100  # spans of this many traces (~16 each) go in one log_spans call


@dataclass
class BuiltTrace:
    """One trace ready for the store."""

    info: Any  # mlflow.entities.TraceInfo
    spans: list[Any]  # mlflow.entities.Span


def _otel_ids(key: str, n: int) -> tuple[int, list[int]]:
    """A 128-bit trace id and n 64-bit span ids, all derived from ``key`` (non-zero, as OpenTelemetry wants)."""
    digest = hashlib.sha256(key.encode()).digest()
    trace_id = int.from_bytes(digest[:16], "big") or 1
    base = int.from_bytes(digest[16:24], "big")
    return trace_id, [((base + i) % (1 << 64)) or 1 for i in range(n)]


def _attrs(values: dict[str, Any]) -> dict[str, str]:
    """Span attributes as MLflow keeps them: every value JSON-encoded."""
    return {k: json.dumps(v, default=str, ensure_ascii=False) for k, v in values.items() if v is not None}


def build_trace(
    key: str,
    specs: Sequence[SpanSpec],
    feedback: Sequence[FeedbackSpec],
    *,
    experiment_id: str,
    tags: dict[str, str],
    metadata: dict[str, str],
) -> BuiltTrace:
    """The trace of ``specs`` (root first), with ``feedback`` as its assessments, under an id derived from key."""
    from mlflow.entities import AssessmentError, AssessmentSource, Feedback, Span, TraceInfo, TraceLocation
    from mlflow.entities.span_status import SpanStatus, SpanStatusCode
    from mlflow.entities.trace_data import TraceData
    from mlflow.entities.trace_state import TraceState
    from mlflow.tracing.constant import (
        TRACE_SCHEMA_VERSION,
        TRACE_SCHEMA_VERSION_KEY,
        SpanAttributeKey,
        TraceMetadataKey,
    )
    from mlflow.tracing.utils import aggregate_usage_from_spans, build_otel_context
    from mlflow.tracing.utils import generate_mlflow_trace_id_from_otel_trace_id as mlflow_trace_id
    from mlflow.tracing.utils.truncation import set_request_response_preview
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan

    otel_trace, span_ids = _otel_ids(key, len(specs))
    trace_id = mlflow_trace_id(otel_trace)
    resource = Resource.get_empty()
    spans = []
    for i, spec in enumerate(specs):
        attributes = {
            SpanAttributeKey.REQUEST_ID: trace_id,
            SpanAttributeKey.SPAN_TYPE: spec.span_type,
            SpanAttributeKey.INPUTS: spec.inputs,
            SpanAttributeKey.OUTPUTS: spec.outputs,
            **spec.attributes,
        }
        parent = None if i == 0 else span_ids[spec.parent or 0]
        status = SpanStatus(SpanStatusCode.ERROR if spec.error else SpanStatusCode.OK)
        spans.append(
            Span(
                ReadableSpan(
                    name=spec.name,
                    context=build_otel_context(otel_trace, span_ids[i]),
                    parent=build_otel_context(otel_trace, parent) if parent is not None else None,
                    start_time=spec.start_ns,
                    end_time=spec.end_ns,
                    attributes=_attrs(attributes),
                    status=status.to_otel_status(),
                    resource=resource,
                )
            )
        )
    root = specs[0]
    meta = {TRACE_SCHEMA_VERSION_KEY: str(TRACE_SCHEMA_VERSION), **metadata}
    # MLflow annotates LiveSpan, but reads only span_id, parent_id and get_attribute, which every Span has
    if usage := aggregate_usage_from_spans(spans):  # type: ignore[arg-type]
        meta[TraceMetadataKey.TOKEN_USAGE] = json.dumps(usage)
    info = TraceInfo(
        trace_id=trace_id,
        trace_location=TraceLocation.from_experiment_id(experiment_id),
        request_time=root.start_ns // 1_000_000,
        execution_duration=(root.end_ns - root.start_ns) // 1_000_000,
        state=TraceState.ERROR if root.error else TraceState.OK,
        trace_metadata=meta,
        tags=dict(tags),
    )
    set_request_response_preview(info, TraceData(spans=spans))
    info.assessments = [
        Feedback(
            name=fb.name,
            value=None if fb.error_code else fb.value,
            error=AssessmentError(error_code=fb.error_code, error_message=fb.rationale) if fb.error_code else None,
            source=AssessmentSource(source_type=fb.source_type, source_id=fb.source_id),
            trace_id=trace_id,
            rationale=None if fb.error_code else fb.rationale,
            metadata=fb.metadata or None,
            create_time_ms=root.end_ns // 1_000_000,
            last_update_time_ms=root.end_ns // 1_000_000,
        )
        for fb in feedback
    ]
    return BuiltTrace(info=info, spans=spans)


def write_traces(store: Any, experiment_id: str, traces: Sequence[BuiltTrace]) -> None:
    """Each trace's info (with its assessments), then the spans of all of them in one call."""
    for t in traces:
        store.start_trace(t.info)
    store.log_spans(experiment_id, [s for t in traces for s in t.spans])


@contextmanager
def bulk_writes(store: Any) -> Iterator[None]:
    """WAL and `synchronous=NORMAL` on a sqlite store's connections for the block; other stores as they are."""
    engine = getattr(store, "engine", None)
    if engine is None or engine.dialect.name != "sqlite":
        yield
        return
    from sqlalchemy import event

    def relaxed(dbapi_connection, _record) -> None:
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")

    with engine.connect() as conn:
        mode = conn.exec_driver_sql("PRAGMA journal_mode=WAL").scalar()
    if mode != "wal":
        log.warning("sqlite store kept journal mode %r (WAL refused); traces are written with full syncs", mode)
    engine.dispose()  # pooled connections predate the listener
    event.listen(engine, "connect", relaxed)
    try:
        yield
    finally:
        event.remove(engine, "connect", relaxed)
        engine.dispose()
