"""The format of a conditional request ("if its status is pending, cancel it; otherwise return it"): its intent
names both branches ('conditional:<tool>|<other tool>'), its details the condition ('if:<field>' → the JSON list
of values under which the first branch holds) and the branch not taken ('untaken:<argument>' → its arguments as
the customer stated them)."""

from __future__ import annotations

import json
from typing import Any

from pipeline.dataset.task import Request

CONDITIONAL_INTENT = "conditional:"
"""A conditional request's intent: 'conditional:<tool>|<other tool>' (the branch taken is the gold write)."""
IF, UNTAKEN = "if:", "untaken:"
"""Detail keys of a conditional request: 'if:<field>' → the JSON list of values under which the first branch
holds; 'untaken:<argument>' → an argument of the branch not taken, as the customer stated it."""


def branches(intent: str) -> tuple[str, str] | None:
    """(the tool if the condition holds, the tool otherwise) of a conditional request's intent."""
    if not intent.startswith(CONDITIONAL_INTENT):
        return None
    first, _, other = intent.removeprefix(CONDITIONAL_INTENT).partition("|")
    return first, other


def condition(req: Request) -> tuple[str, list[Any]] | None:
    """(field, values under which the first branch holds) of a conditional request, if it records one."""
    key = next((k for k in req.details if k.startswith(IF)), None)
    if key is None or branches(req.intent) is None:
        return None
    try:
        values = json.loads(req.details[key])
    except json.JSONDecodeError:
        return None
    return (key.removeprefix(IF), values) if isinstance(values, list) else None
