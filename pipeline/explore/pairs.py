"""Which conditional pairs a world model allows: a heading write, a condition on its record, and a sibling write
for when the condition fails, both branches seen to succeed (`WriteModel.ok_states`). Read by the conditional
template (`pipeline.explore.conditional`) and by the draw's balance of branches (`pipeline.explore.balance`).
"""

from __future__ import annotations

from typing import Any

from pipeline.explore.model import WorldModel

Pair = tuple[str, list[Any], str]  # (field, values under which the heading write holds, sibling)


def key(v: Any) -> Any:
    """A field value as a set member (lists and objects by their repr)."""
    return v if not isinstance(v, (list, dict)) else repr(v)


def conditions(model: WorldModel, tool: str) -> list[tuple[str, list[Any]]]:
    """(field, values) a branch can turn on: the tool's preconditions on a field of its record, with the values
    it was seen to accept; failing those, each value of an enumerated field of the record's table."""
    w = model.writes[tool]
    found = [(g.precondition.field, g.precondition.allowed) for g in w.refusals
             if g.precondition is not None and g.precondition.kind == "field" and g.precondition.on is None
             and g.precondition.field and g.precondition.allowed]  # fmt: skip
    if found or w.subject_table is None:
        return found
    enumerated = model.tables[w.subject_table].enumerated
    return [(f, [v]) for f, vs in sorted(enumerated.items()) if len(vs) > 1 for v in vs if v is not None]


def siblings(model: WorldModel, tool: str) -> list[str]:
    """The other write tools about a record of the same table (the 'otherwise' branch); none on the customer's
    own record (a branch turns on one of the customer's records, not on who they are)."""
    table = model.writes[tool].subject_table
    if table == model.customer_table:
        return []
    return sorted(n for n, w in model.writes.items() if n != tool and table and w.subject_table == table)


def live(model: WorldModel, tool: str) -> list[Pair]:
    """(field, values, sibling) whose both branches can be carried out: `tool` succeeded on a record whose field had
    one of the values, the sibling on a record whose field had none of them (`WriteModel.ok_states`)."""
    out = []
    for field, allowed in conditions(model, tool):
        if not set(map(key, model.writes[tool].ok_states.get(field, []))) & set(map(key, allowed)):
            continue
        for other in siblings(model, tool):
            if set(map(key, model.writes[other].ok_states.get(field, []))) - set(map(key, allowed)):
                out.append((field, allowed, other))
    return out
