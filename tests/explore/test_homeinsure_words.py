"""How the generic path speaks of a domain whose words it has no list for (tests/domains/homeinsure): a name kept
as given name and surname said whole, a table in -ies said in the singular, amounts kept as floats said as a person
says them, and no request to change (or question about) a field that names a record rather than describes it."""

from __future__ import annotations

import random
import re

import pytest
from pydantic import BaseModel

from pipeline.explore.identity import whole_name
from pipeline.explore.kit import Grounding, plural, singular
from pipeline.explore.questions import Question
from pipeline.explore.references import identifying
from pipeline.explore.speech import phrase, speak
from pipeline.grading.grader import grade
from pipeline.rollout.runner import run_episode
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world
from tests.explore.flaw_check import assert_planted_flaws_fail

SPEC = "tests.domains.homeinsure.domain:HOMEINSURE"
_POINT_ZERO = re.compile(r"\b\d+\.0\b")


@pytest.fixture(scope="module")
def world():
    return load_world("homeinsure", SPEC)


@pytest.fixture(scope="module")
def tasks(world):
    return world.domain.require("tasks")(world, 40, seed=0)


def _said(task) -> list[str]:
    return [task.user_script.goal, *(r.utterance for r in task.user_script.requests)]


def test_a_name_kept_as_given_name_and_surname_is_said_whole(world, tasks):
    holders = world.table("policyholders")
    for t in tasks:
        holder = holders[t.customer_user_id]
        assert t.user_script.goal.startswith(f"You are {holder.given_name} {holder.surname}. "), t.id
    assert whole_name({"id": "P1", "forename": "Olga", "middle_name": "Ivanovna", "family_name": "Petrova"}) == (
        "Olga Ivanovna Petrova"
    )
    assert whole_name({"surname": "Petrova", "given_name": "Olga"}) == "Petrova Olga"  # the record's order
    assert whole_name({"givenName": "Olga", "familyName": "Petrova"}) == "Olga Petrova"
    assert whole_name({"given_name": "Olga", "display_name": "op"}) is None  # half a name is no whole name


def test_tables_are_said_in_the_singular_by_the_regular_rules(tasks):
    cases = {"policies": "policy", "claims": "claim", "addresses": "address", "boxes": "box",
             "branches": "branch", "dishes": "dish", "days": "day", "status": "status", "series": "series",
             "invoices": "invoice", "sizes": "size", "buzzes": "buzz", "statuses": "status",
             "warehouses": "warehouse", "taxes": "tax", "people": "people"}  # fmt: skip
    assert {t: singular(t) for t in cases} == cases
    assert all(plural(one) == many for many, one in cases.items() if many not in ("status", "people"))
    said = " ".join(s for t in tasks for s in _said(t))
    assert "my policy HP-" in said and "policie " not in said


def test_numbers_are_said_as_a_person_says_them(world, tasks):
    assert speak(1046.0) == "1046" and speak(12.5) == "12.5" and speak(-3.0) == "-3" and speak(7) == "7"
    assert phrase("amount", 1046.0) == "amount 1046" and speak([95.0, 412.5]) == "95 and 412.5"
    amended = [t for t in tasks if any(a.name == "amend_claim_amount" for a in t.gold_actions)]
    assert amended and not [s for t in tasks for s in _said(t) if _POINT_ZERO.search(s)]
    oracle, user = world.domain.require("oracle")(), ScriptedUser()
    for t in tasks:
        assert grade(world, t, run_episode(world, t, oracle, user)).passed, t.id


def test_the_flawed_agent_fails_what_it_plants_on_the_insurer(world):
    assert_planted_flaws_fail(world)


def test_fields_that_name_a_record_are_found(world):
    found = identifying(Grounding(world).ex)
    assert {"claim_id", "policy_number", "holder_id"} <= found["claims"]
    assert not {"description", "peril", "status"} & found["claims"]
    assert {"policy_number", "holder_id"} <= found["policies"] and "cover" not in found["policies"]


class _Ref(BaseModel):
    ref: str
    number: str
    note: str


class _Table:
    def __init__(self, key_field: str | None) -> None:
        self.key_field = key_field


class _Explorer:
    """Just what `identifying` reads: a world of two tables, the second referring to the first's alternate key."""

    def __init__(self) -> None:
        rows = {"policies": {"P1": _Ref(ref="P1", number="HP-1", note="a"), "P2": _Ref(ref="P2", number="HP-2",
                                                                                     note="b")},
                "claims": {"C1": _Ref(ref="C1", number="HP-1", note="burst pipe"),
                           "C2": _Ref(ref="C2", number="HP-1", note="burst pipe")}}  # fmt: skip
        self.tables = {t: _Table("ref") for t in rows}
        self.by_key = {"ref": "policies"}
        self.world = type("W", (), {"table": staticmethod(rows.__getitem__)})()


def test_an_alternate_key_and_the_field_referring_to_it_name_a_record():
    found = identifying(_Explorer())
    assert found["policies"] == {"ref", "number"} and found["claims"] == {"ref", "number"}


def _asked(ctx: Grounding, tool: str, unservable: bool) -> set[tuple[str, str]]:
    """(table, field) of every request the question template drafts, over every customer and a few seeds."""
    out = set()
    for user in ctx.ex.customers:
        for seed in range(6):
            draft = Question(tool, unservable=unservable)(ctx, ctx.customer(user), random.Random(seed), set(), "done")
            if draft is not None:
                table, _, field = draft.request.intent.partition(":")[2].partition(".")
                out.add((table, field))
    return out


def test_no_change_no_tool_makes_is_asked_of_a_field_that_names_a_record(world):
    ctx = Grounding(world)
    named = identifying(ctx.ex)
    changes = _asked(ctx, "get_claim", True) | _asked(ctx, "get_policy", True)
    assert changes and not [(t, f) for t, f in changes if f in named[t]], changes
    assert ("claims", "peril") in changes and ("policies", "cover") in changes
    questions = _asked(ctx, "get_claim", False) | _asked(ctx, "get_policy", False)
    assert questions and "holder_id" not in {f for _, f in questions}  # never 'the holder id of my claim'
    assert ("claims", "amount") in questions  # told as a person says it: '1046'
