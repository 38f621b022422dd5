"""Our verdict on a trial as MLflow feedback: pass / fail, the failure modes, the state-diff summary, the judge.

Pure data, so the assessment names a user filters on in `mlflow ui` are fixed and tested here. The grader is
code (source CODE, id `agentloop.grader`); the judge, where one ran, is an LLM judge.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.grading import USAGE_NOTE, FailureAnalysis, FieldDiff, Verdict, count_by_kind

GRADER = "agentloop.grader"
MAX_DIFF_LINES = 20
MAX_RATIONALE_CHARS = 4000


class FeedbackSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    value: Any = None
    rationale: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    source_type: Literal["CODE", "LLM_JUDGE"] = "CODE"
    source_id: str = GRADER
    error_code: str | None = Field(default=None, description="Set when no value could be given (infra error).")


def _clip(text: str) -> str:
    return text if len(text) <= MAX_RATIONALE_CHARS else text[: MAX_RATIONALE_CHARS - 1] + "…"


def diff_line(d: FieldDiff) -> str:
    """One state difference as a line a person reads.

    >>> diff_line(FieldDiff(kind="wrong_value", table="orders", key="#W1", path="status", expected="x", actual="y"))
    "wrong_value orders[#W1].status: expected 'x', got 'y'"
    """
    return f"{d.kind} {d.table}[{d.key}].{d.path}: expected {d.expected!r}, got {d.actual!r}"


def diff_summary(counts: dict[str, int]) -> str:
    """The state diff as one short text the trace table can show (a mapping would show as an object there).

    >>> diff_summary({"wrong_value": 2, "unrequested_change": 0, "missing_change": 1})
    '2 wrong_value, 1 missing_change'
    """
    return ", ".join(f"{n} {kind}" for kind, n in counts.items() if n) or "no difference"


def _judge(verdict: Verdict) -> FeedbackSpec | None:
    c = verdict.component("judge")
    if c is None or "no judge configured" in c.notes:
        return None
    said = [n for n in c.notes if not n.startswith(USAGE_NOTE)]
    return FeedbackSpec(
        name="judge",
        value=c.passed,
        rationale=_clip("\n".join(c.details + said) or "every rubric item met"),
        source_type="LLM_JUDGE",
        source_id="agentloop.judge",
    )


def verdict_feedback(verdict: Verdict, analysis: FailureAnalysis | None) -> list[FeedbackSpec]:
    """`passed` for every trial; `failure_modes` and `dominant_failure_mode` for a failed one; `state_diff`
    (a one-line summary, counts by kind in metadata, the differing fields as rationale) for every graded one;
    `judge` where a judge ran."""
    if verdict.infra_error:
        return [
            FeedbackSpec(
                name="passed",
                error_code="INFRA_ERROR",
                rationale=_clip("; ".join(verdict.diagnostics) or "lost to an infrastructure error (not graded)"),
            )
        ]
    failed = [c for c in verdict.components if c.required and not c.passed]
    why = "\n".join(f"{c.name}: {'; '.join(c.details) or 'failed'}" for c in failed)
    out = [FeedbackSpec(name="passed", value=verdict.passed, rationale=_clip(why or "every required check passed"))]
    if not verdict.passed and analysis is not None and analysis.modes:
        evidence = [f"{mode}: {line}" for mode, lines in analysis.evidence.items() for line in lines]
        meta = {"looked_complete": str(analysis.looked_complete).lower(), "signature": ",".join(analysis.signature)}
        out.append(
            FeedbackSpec(
                name="failure_modes",
                value=list(analysis.modes),
                rationale=_clip("\n".join(evidence)) or None,
                metadata={"dominant": analysis.dominant or "", **meta},
            )
        )
        if analysis.dominant:
            out.append(FeedbackSpec(name="dominant_failure_mode", value=analysis.dominant, metadata=meta))
    counts = count_by_kind(verdict.diffs)
    lines = [diff_line(d) for d in verdict.diffs[:MAX_DIFF_LINES]]
    if len(verdict.diffs) > MAX_DIFF_LINES:
        lines.append(f"… and {len(verdict.diffs) - MAX_DIFF_LINES} more")
    out.append(
        FeedbackSpec(
            name="state_diff",
            value=diff_summary(counts),
            rationale=_clip("\n".join(lines)) if lines else "final state matches the expected state",
            metadata={
                **{kind: str(n) for kind, n in counts.items()},
                "final_hash": verdict.final_hash,
                "expected_hash": verdict.expected_hash,
            },
        )
    )
    if judged := _judge(verdict):
        out.append(judged)
    return out
