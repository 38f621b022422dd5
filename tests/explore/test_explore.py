"""Explore by execution: the world model learned from calling a domain's tools, for the studio and airline."""

from __future__ import annotations

from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.explore.model import WorldModel
from pipeline.explore.probe import explore
from pipeline.world.registry import load_world
from tests.domains.toy.domain import generate


def test_the_studio_model_names_records_changes_and_preconditions():
    model = explore(generate(0), seed=0)
    assert model.customer_table == "users" and model.identity == {"find_user_id_by_email": "email"}
    assert model.tools["get_booking_details"].reads == "bookings"
    cancel = model.writes["cancel_booking"]
    assert (cancel.subject, cancel.subject_table) == ("booking_id", "bookings") and cancel.ok > 0
    status = next(e for e in cancel.effects if e.field == "status")
    assert status.transitions == [["booked", "cancelled"]]
    assert {(e.table, e.field) for e in cancel.effects} == {("bookings", "status"), ("classes", "open_spots")}
    by_kind = {r.precondition.kind: r.precondition for r in cancel.refusals if r.precondition}
    assert by_kind["field"].field == "status" and by_kind["field"].allowed == ["booked"]
    assert set(by_kind["field"].values) == {"attended", "cancelled"}
    assert "owner" in by_kind and cancel.allowed_when == {"status": ["booked"]}
    zip_ = model.writes["modify_user_zip"]
    assert zip_.subject == "user_id" and [e.set_from for e in zip_.effects] == ["zip"]
    assert not model.unexplored


def test_the_model_is_seeded_and_round_trips_as_json(tmp_path):
    world = generate(1)
    a, b, c = explore(world, seed=0), explore(world, seed=0), explore(world, seed=1)
    assert a == b and a.model_dump() != c.model_dump()
    out = tmp_path / "model.json"
    result = CliRunner().invoke(
        app, ["world", "explore", "--world", "gen-1", "--domain", "tests.domains.toy.domain:TOY", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert WorldModel.read(out) == a and "cancel_booking" in result.output


def test_airline_refusals_group_into_preconditions_on_the_record(tau2_airline_dir):
    model = explore(load_world(str(tau2_airline_dir), "airline"), seed=0)
    passengers = model.writes["update_reservation_passengers"]
    compare = [r.precondition for r in passengers.refusals if r.precondition and r.precondition.kind == "compare"]
    assert [(p.field, p.relation) for p in compare] == [("passengers", "!=")]  # the count never changes
    assert all(any(r.precondition and r.precondition.kind == "owner" for r in w.refusals)
               for w in model.writes.values())  # fmt: skip
    assert {e.field for e in model.writes["cancel_reservation"].effects} >= {"status"}
    assert not model.unexplored  # every write ran, the structured one too


def test_structured_arguments_are_formed_from_the_records_and_run(tau2_airline_dir):
    """Lists of objects composed from table keys and the mappings they name, amounts set as the refusal says."""
    model = explore(load_world(str(tau2_airline_dir), "airline"), seed=0)
    args = model.tools["book_reservation"].args
    assert (args["flights"].binds, args["flights"].table) == ("object", "flights")
    assert args["passengers"].fields == ["first_name", "last_name", "dob"]
    book = model.writes["book_reservation"]
    assert book.ok > 0 and any(e.table == "reservations" and e.created for e in book.effects)
    patterns = [g.pattern for g in book.refusals if g.category == "precondition"]
    assert "payments add up to <n> but the total price is <n>" in patterns
    assert any(p.startswith("flight <v> on <v> is") for p in patterns)  # a date the flight does not fly bookable


def test_a_refusal_message_that_is_an_instance_of_another_joins_its_group():
    from pipeline.explore.learn import fold

    general, plain = "the flights of a basic <v> reservation cannot be changed", "checked bags cannot be removed"
    other = ("invalid_arguments", "the flights of a basic x reservation cannot be changed")  # another category
    groups = {("precondition", "the flights of a basic economy reservation cannot be changed"): ["a", "b"],
              ("precondition", general): ["c"], ("precondition", plain): ["d"], other: ["e"]}  # fmt: skip
    assert fold(groups) == {("precondition", general): ["c", "a", "b"], ("precondition", plain): ["d"], other: ["e"]}
