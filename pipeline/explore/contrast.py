"""Contrast: a refusal is put down to a record field only when changing that field alone lets the call through.

What refused calls have in common may be chance (a narrow sample of records, a value that goes with the real
cause). A field precondition found by comparing refused and successful calls is kept only when it is confirmed:
one of the group's refused calls, made again by the same customer with the same arguments in a world where only
that field of the records it names is set to a value seen on successful calls (`World.altered`: the domain's
rules judge the call against that state), succeeds — or is refused
for another reason (a message the group's pattern does not match): the field alone lifted this refusal, and the
call's other arguments stop it further on.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

if TYPE_CHECKING:
    from pipeline.explore.learn import Call
    from pipeline.explore.probe import Explorer

CALLS = 4
"""Refused calls of a group tried."""
VALUES = 3
"""Allowed values tried per call."""


def confirmed(
    ex: Explorer, group: list[Call], arg: str, table: str, field: str, allowed: list[Any], refusal: re.Pattern[str]
) -> bool:
    """Whether some refused call of the group gets past the `refusal` with only `field` of the records `arg` names
    changed to an allowed value (each named record whose value is not allowed gets it)."""
    for call in group[:CALLS]:
        named = call.named.get(arg, [])
        changing = [k for k, rec in named if _h(rec.get(field)) not in allowed]
        if not changing:
            continue
        for value in allowed[:VALUES]:
            try:
                again = ex.call(call.tool, call.user, call.arguments, {(table, k, field): value for k in changing})
            except (ValidationError, TypeError, ValueError):
                continue
            if again.ok or not refusal.match(again.error or ""):
                return True
    return False


def _h(v: Any) -> Any:
    return v if not isinstance(v, (list, dict)) else repr(v)
