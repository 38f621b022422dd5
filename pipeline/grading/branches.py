"""Misread on a conditional request: the branch the shown state does not select, taken.

A conditional request ("if its status is pending, cancel it; otherwise return it") records its branches in its
intent ('conditional:<tool>|<other tool>') and its condition in its details ('if:<field>' → the JSON list of
values under which the first branch holds). When the tools showed the record's field, a write of the branch that
value does not select, on that record, is evidence of misread: the agent acted on the condition's other outcome.
"""

from __future__ import annotations

from typing import Any

from pipeline.dataset import Task, branches, condition
from pipeline.grading.mode_rules import Finding
from pipeline.grading.timeline import Step, Timeline


def _names(step: Step, record_id: str) -> bool:
    return any(v == record_id for v in step.arguments.values())


def branch_findings(task: Task, timeline: Timeline) -> list[Finding]:
    """A write of the branch the record's shown field does not select, per conditional request."""
    conds = [(r, c) for r in task.user_script.requests if r.record_id and (c := condition(r)) is not None]
    if not conds:
        return []
    shown: dict[str, dict[str, Any]] = {}
    out: list[Finding] = []
    for step in timeline.steps:
        rec = step.record() if step.ok and not step.is_write else None
        for req, (field, values) in conds:
            rid = req.record_id
            assert rid is not None  # kept above
            if rec is not None and field in rec and any(v == rid for v in rec.values()):
                shown[rid] = rec
            pair = branches(req.intent)
            if not step.is_write or pair is None or step.name not in pair or not _names(step, rid) or rid not in shown:
                continue
            value = shown[rid][field]
            selected = pair[0] if value in values else pair[1]
            if step.name != selected:
                why = f"{step.name} on {rid}, whose {field} the tools showed as '{value}': {selected} was asked then"
                out.append(Finding(step.pos, "misread", why))
    return out
