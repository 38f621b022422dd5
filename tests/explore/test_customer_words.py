"""What a customer of a domain on the generic path knows and says: identity facts derived from the identity tool's
schema and the customer's own record (tests/domains/waterboard: a member number and PIN, or an email and a date of
birth; one `name` field), named by their own name, lists spoken as items, text in the domain's words."""

from __future__ import annotations

import json
import re

import pytest

from pipeline.dataset.task import KnownInfo, Request
from pipeline.explore.generic_kit import GenericKit
from pipeline.explore.kit import Grounding
from pipeline.explore.speech import phrase, speak, spoken
from pipeline.explore.values import examples, harvest
from pipeline.grading.grader import grade
from pipeline.rollout.runner import run_episode
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world
from pipeline.world.tables import dump_record
from tests.explore.flaw_check import assert_planted_flaws_fail

PIN = "tests.domains.waterboard.domain:WATERBOARD"
DOB = "tests.domains.waterboard.domain:WATERBOARD_DOB"
_JSON = re.compile(r"[\[\]{}\"]")


def _world_words(world) -> set[str]:
    """Every text a record holds, every docstring example and every enumerated choice of the domain's tools."""
    said = {v for t in world.table_names for r in world.query(t) for vs in harvest([dump_record(r)]).values()
            for v in vs if isinstance(v, str)}  # fmt: skip
    for spec in world.domain.tools.tools.values():
        for prop in spec.json_schema()["function"]["parameters"].get("properties", {}).values():
            said |= set(examples(prop.get("description"))) | set(prop.get("enum", []))
    return said


@pytest.mark.parametrize("spec", [PIN, DOB])
def test_a_domain_identifying_by_what_no_list_names_generates_tasks_the_oracle_solves(spec):
    world = load_world("waterboard", spec)
    tasks = world.domain.require("tasks")(world, 24, seed=0)
    assert len(tasks) == 24
    oracle, user = world.domain.require("oracle")(), ScriptedUser()
    accounts = world.table("accounts")
    identity = next(iter(world.domain.tools.of_kind("identity")))
    words = _world_words(world)
    for t in tasks:
        account = accounts[t.customer_user_id]
        assert t.user_script.goal.startswith(f"You are {account.name}. ")  # by their own name, never 'None None'
        auth = t.gold_actions[0]
        assert auth.name == identity and all(v == getattr(account, a) for a, v in auth.arguments.items())
        traj = run_episode(world, t, oracle, user)
        assert grade(world, t, traj).passed, t.id
        said = [m.content or "" for m in traj.messages if m.role == "user"]
        said += [r.utterance for r in t.user_script.requests]
        assert not [s for s in said if _JSON.search(s)], t.id  # no list or object spoken as JSON
        for a in t.gold_actions:  # every text a write carries is the world's or the docstring's, never made up
            if a.name in world.domain.tools.of_kind("write"):
                values = [v for x in a.arguments.values() for v in (x if isinstance(x, list) else [x])]
                assert all(v in words for v in values if isinstance(v, str)), (t.id, a.arguments)
    assert {t.user_script.known.facts.get("pin") for t in tasks} != {None} or spec == DOB
    assert {t.user_script.known.facts.get("date_of_birth") for t in tasks} != {None} or spec == PIN
    listed = [a for t in tasks for a in t.gold_actions if a.name == "pay_bills"]
    assert listed and any(r.intent == "dispute_bill" for t in tasks for r in t.user_script.requests)


def test_the_flawed_agent_fails_what_it_plants_on_the_waterboard():
    world = load_world("waterboard", PIN)
    assert_planted_flaws_fail(world)


def test_what_a_customer_knows_comes_from_the_identity_tool_and_their_record():
    world = load_world("waterboard", PIN)
    ctx = Grounding(world)
    known = ctx.customer("WA-1007").known
    account = world.table("accounts")["WA-1007"]
    assert known.facts == {"member_number": "WA-1007", "pin": account.pin} and known.name == account.name
    assert known.called == account.name and known.stated()["pin"] == account.pin
    assert not ctx.identifiable_without_email(ctx.customer("WA-1007"))  # no identity tool asks for an email
    dob = Grounding(load_world("waterboard", DOB)).customer("WA-1007").known
    assert dob.facts == {"date_of_birth": account.date_of_birth} and dob.email == account.email


def test_a_declared_identity_field_is_known_too():
    from tests.domains.waterboard.domain import WATERBOARD, Waterboard

    class Declared(Waterboard):
        def identity_fields(self) -> tuple[str, ...]:
            return ("date_of_birth",)

    world = Declared("declared", WATERBOARD.tools).load("waterboard")
    known = Grounding(world).customer("WA-1007").known
    assert known.facts["date_of_birth"] == world.table("accounts")["WA-1007"].date_of_birth


def test_an_identity_argument_is_found_under_the_record_field_named_for_it():
    from pipeline.explore.identity import _as, named_for

    assert named_for("dob", "date_of_birth") and named_for("date_of_birth", "dob")
    assert named_for("patient_email", "email")
    assert named_for("phone", "phone_number") and not named_for("id", "identity") and not named_for("pin", "spin")
    assert _as(str, 420) == "420" and _as(int, "0420") == 420 and _as(str, "x") == "x"


def test_known_info_keeps_the_json_of_a_customer_with_first_and_last_name():
    known = KnownInfo(email="a@b.c", first_name="Ada", last_name="Lovelace", zip="12345", user_id="ada_1")
    assert set(json.loads(known.model_dump_json())) == {"email", "first_name", "last_name", "zip", "user_id"}
    assert known.called == "Ada Lovelace" and KnownInfo(user_id="u1").called is None
    from pipeline.authoring.assemble import _who

    assert _who(KnownInfo(user_id="u1"), "u1") == "the customer with id u1"  # never 'None None'
    assert _who(KnownInfo(first_name="Ada"), "u1") == "Ada"
    both = KnownInfo(name="Ada Lovelace", facts={"pin": "0420", "member_number": 7})
    assert KnownInfo.model_validate_json(both.model_dump_json()) == both


def test_a_language_model_customer_is_told_what_they_know():
    from pipeline.users.llm import scenario_text

    world = load_world("waterboard", PIN)
    task = world.domain.require("tasks")(world, 1, seed=0)[0]
    known = task.user_script.known
    text = scenario_text(task.user_script)
    assert f"name: {known.name}" in text and f"pin: {known.facts['pin']}" in text and "None" not in text


def test_values_are_spoken_as_a_person_says_them():
    assert speak(["BL1", "BL2", "BL3"]) == "BL1, BL2 and BL3" and speak(["BL1"]) == "BL1"
    assert speak({"first_name": "Ada", "dob": "1815-12-10"}) == "first name Ada, dob 1815-12-10"
    assert phrase("bill_ids", ["BL1"]) == "bill id BL1" and phrase("bill_ids", ["BL1", "BL2"]) == "bill ids BL1 and BL2"
    assert spoken('["BL1", "BL2"]') == "BL1 and BL2" and spoken("credit_card_7") == "credit_card_7"
    assert speak(2) == "2" and speak(True) == "true"  # as a tool's output shows it


def test_a_rewording_must_keep_every_item_of_a_spoken_list():
    from pipeline.explore.llm import phrasing_problem

    req = Request(intent="pay_bills", utterance="I'd like you to pay bills, with bill ids BL1 and BL2.",
                  details={"bill_ids": '["BL1", "BL2"]'})  # fmt: skip
    assert phrasing_problem(req, "Please pay my bill BL1.") == "value_lost"
    assert phrasing_problem(req, "Can you pay BL1 and BL2 for me?") is None


def test_a_write_is_said_about_its_record():
    from pipeline.explore.kit import action

    assert action("dispute_bill", "bills", "BL1", "my") == "dispute my bill BL1"
    assert action("pay_bills", "bills", "BL1", "your") == "pay your bill BL1"
    assert action("place_hold", "members", "M1", None) == "place hold for member M1"
    assert action("pay_bills", None, None, "my") == "pay bills"


def test_a_request_with_its_record_unsaid_stays_grammatical():
    kit = GenericKit(load_world("waterboard", PIN).domain.tools)
    mine = Request(intent="dispute_bill", utterance="I'd like you to dispute my bill BL0004, with reason x.",
                   record_id="BL0004")  # fmt: skip
    assert kit.unspecify(mine).utterance == "I'd like you to dispute one of my bills, with reason x."
    asked = Request(intent="q", utterance="Could you tell me the status of my loan L0001?", record_id="L0001")
    assert kit.unspecify(asked).utterance == "Could you tell me the status of one of my loans?"
    assert kit.unspecify(Request(intent="q", utterance="Pay bills.", record_id="BL1")) is None
    another = Request(intent="dispute_bill", utterance="I'd like you to dispute bill BL0027.", record_id="BL0027")
    assert kit.unspecify(another) is None  # another customer's record is never left unsaid
