"""A number the explorer varies stays within what is valid for its argument: the schema's bounds, a range the
docstring states, and the sign of every value known for it (the docstring's example, the records'). A plug-in
whose write takes `extra_days` (such as 3) never gets a task asking for 0 or -1 extra days."""

from __future__ import annotations

import json
import random
import re
import textwrap

import pytest

from pipeline.explore.values import candidates
from pipeline.world import load_world

EXTEND = """
    import json

    from pipeline.world.tables import dump_record
    from pipeline.world.tools import ToolError, ToolRegistry
    from tests.domains.library.domain import TOOLS, Library, _loan

    EXTENDED = ToolRegistry()
    EXTENDED.tools = dict(TOOLS.tools)

    @EXTENDED.register("write", private=True)
    def extend_loan(s, loan_id: str, extra_days: int) -> str:
        \"\"\"Extend an active loan by some days.

        Args:
            loan_id: The loan id, such as 'L0042'.
            extra_days: How many days to add, such as 3.
        \"\"\"
        loan = _loan(s, loan_id)
        if loan.status != "active":
            raise ToolError(f"loan {loan_id} is {loan.status}; only active loans can be extended")
        if extra_days <= 0:
            raise ToolError("extra days must be positive", "invalid_arguments")
        loan = s.edit("loans", loan_id)
        loan.due = f"{loan.due[:-2]}{min(int(loan.due[-2:]) + extra_days, 28):02d}"
        return json.dumps(dump_record(loan))

    class Extended(Library):
        tools = EXTENDED

    LIB = Extended()
"""


@pytest.mark.parametrize(
    ("annotation", "schema", "description", "harvested", "allowed"),
    [
        (int, {"type": "integer"}, "How many days to add, such as 3.", [], lambda v: v > 0),
        (int, {"type": "integer"}, "How many days.", [1], lambda v: v > 0),  # 1 - 1 is not varied into
        (float, {"type": "number"}, "An amount.", [0.5, 12.0], lambda v: v > 0),
        (int, {"type": "integer"}, "Bags, such as 2.", [0], lambda v: v >= 0),  # 0 is known: kept; -1 is not
        (int, {"type": "integer"}, "The rating, from 1 to 5.", [], lambda v: 1 <= v <= 5),
        (int, {"type": "integer", "minimum": 10, "maximum": 60}, "Minutes.", [], lambda v: 10 <= v <= 60),
        (int, {"type": "integer", "exclusiveMinimum": 0}, "Seats.", [], lambda v: v > 0),
    ],
)
def test_varied_numbers_stay_within_what_is_valid(annotation, schema, description, harvested, allowed):
    values = candidates(annotation, schema, description, harvested, random.Random(0))
    assert values and all(allowed(v) for v in values), values


def test_numbers_known_negative_may_be_varied_below_zero():
    values = candidates(int, {"type": "integer"}, "A change, such as -2.", [-2], random.Random(0))
    assert -3 in values and 0 in values, values


def test_tasks_of_a_plug_in_never_ask_for_zero_extra_days(tmp_path, monkeypatch):
    (tmp_path / "library_extend.py").write_text(textwrap.dedent(EXTEND))
    monkeypatch.syspath_prepend(str(tmp_path))
    world = load_world("library", "library_extend:LIB")
    tasks = world.domain.require("tasks")(world, 40, seed=0)
    text = "\n".join(json.dumps(t.model_dump(mode="json")) for t in tasks)
    asked = [int(n) for n in re.findall(r'"extra_days": (-?\d+)', text)]
    asked += [int(n) for n in re.findall(r"extra days (-?\d+)", text)]
    assert asked and min(asked) > 0, sorted(set(asked))
