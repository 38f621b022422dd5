"""Airline writes the policy forbids are refused and change nothing: by the tools' own checks, and, for anything a
tool misses, by the domain's invariants that `execute` keeps on every write."""

from __future__ import annotations

import copy

import pytest

from pipeline.domains.airline import tools as airline_tools
from pipeline.world.registry import load_world
from pipeline.world.tools import execute

AARAV = "aarav_anderson_6237"  # gift card 264.0 and two credit cards; BU71UY is business with insurance
GIFT, CARD = "gift_card_5333120", "credit_card_5252591"
FLIGHT = {"flight_number": "HAT001", "date": "2024-05-29"}  # PHL -> LGA, 5 business seats at 387


@pytest.fixture(scope="module")
def world(tau2_airline_dir):
    return load_world(str(tau2_airline_dir), "airline")


def booking(flights, passengers, payments):
    return {
        "user_id": AARAV,
        "origin": "PHL",
        "destination": "LGA",
        "flight_type": "one_way",
        "cabin": "business",
        "flights": flights,
        "passengers": [{"first_name": "A", "last_name": f"P{i}", "dob": "1990-01-01"} for i in range(passengers)],
        "payment_methods": [{"payment_id": pid, "amount": amount} for pid, amount in payments],
        "total_baggages": 0,
        "nonfree_baggages": 0,
        "insurance": "no",
    }


def refused(session, name, arguments, fragment):
    before = (session.state_hash(), copy.deepcopy(session.changed()))
    event = execute(session, name, arguments)
    assert not event.ok, f"{name} should have been refused: {event.result}"
    assert fragment in event.error, event.error
    assert event.touched == [] and (session.state_hash(), session.changed()) == before
    return event


def test_a_negative_gift_card_payment_is_refused_and_the_balance_kept(world):
    s = world.session(authenticated_user_id=AARAV)
    refused(s, "book_reservation", booking([FLIGHT], 1, [(CARD, 387 + 500), (GIFT, -500)]), "must be positive")
    assert s.get("users", AARAV).payment_methods[GIFT].amount == 264.0
    refused(s, "book_reservation", booking([FLIGHT], 1, [(CARD, 387), (GIFT, 0)]), "must be positive")
    assert execute(s, "book_reservation", booking([FLIGHT], 1, [(CARD, 387 - 64), (GIFT, 64)])).ok
    assert s.get("users", AARAV).payment_methods[GIFT].amount == 200.0


def test_the_same_flight_twice_is_refused_and_no_seat_taken(world):
    s = world.session(authenticated_user_id=AARAV)
    seats = s.get("flights", "HAT001").dates["2024-05-29"].available_seats["business"]
    refused(s, "book_reservation", booking([FLIGHT, FLIGHT], 3, [(CARD, 387 * 6)]), "listed more than once")
    assert s.get("flights", "HAT001").dates["2024-05-29"].available_seats["business"] == seats == 5
    res = world.table("reservations")["RH6XFN"]  # business: its flights may change
    twice = [{"flight_number": f.flight_number, "date": f.date} for f in res.flights[:1]] * 2
    refused(
        s,
        "update_reservation_flights",
        {"reservation_id": "RH6XFN", "cabin": "business", "flights": twice, "payment_id": CARD},
        "listed more than once",
    )


def test_a_cancelled_reservation_cannot_be_changed(world):
    s = world.session(authenticated_user_id=AARAV)
    assert execute(s, "cancel_reservation", {"reservation_id": "BU71UY"}).ok
    people = [{"first_name": "New", "last_name": f"Name{i}", "dob": "1990-01-01"} for i in range(2)]
    refused(s, "update_reservation_passengers", {"reservation_id": "BU71UY", "passengers": people}, "is cancelled")
    assert s.get("reservations", "BU71UY").passengers[0].first_name != "New"


def test_what_a_tool_misses_the_invariants_refuse(world, monkeypatch):
    """With the tools' own checks taken away, the domain's invariants still refuse each write and undo it."""
    monkeypatch.setattr(airline_tools, "_distinct", lambda flights: None)
    s = world.session(authenticated_user_id=AARAV)
    event = refused(s, "book_reservation", booking([FLIGHT, FLIGHT], 1, [(CARD, 387 * 2)]), "'reservation_changes'")
    assert "lists a flight more than once" in event.error

    def no_seat_check(s, ref, cabin, seats):
        flight = s.get("flights", ref.flight_number)
        return flight, flight.dates[ref.date]

    monkeypatch.setattr(airline_tools, "_bookable", no_seat_check)
    economy = {**booking([FLIGHT], 2, [(CARD, 173 * 2)]), "cabin": "economy"}  # one economy seat left
    event = refused(s, "book_reservation", economy, "'balances'")
    assert "-1 economy seats" in event.error
    assert s.get("flights", "HAT001").dates["2024-05-29"].available_seats["economy"] == 1


def test_the_invariants_name_a_changed_cancelled_reservation_and_a_negative_payment(world):
    from pipeline.domains.airline.invariants import check_reservation_changes
    from pipeline.grading.static_checks import StaticInput
    from pipeline.world.tables import dump_record

    res = dump_record(world.table("reservations")["BU71UY"])
    cancelled = world.table("reservations")["BU71UY"].model_copy(update={"status": "cancelled"})
    tables = {name: dict(world.table(name)) for name in world.table_names}
    tables["reservations"]["BU71UY"] = cancelled
    from pipeline.world.tables import World

    w = World(tables, world.policy, "cancelled-base", world.domain)
    changed = {**res, "status": "cancelled", "passengers": res["passengers"][::-1]}
    result = check_reservation_changes(StaticInput(w, [], {"reservations": {"BU71UY": changed}}))
    assert result.details == ["reservation BU71UY: a cancelled reservation was changed"]
    new = {**res, "reservation_id": "HATHAT", "payment_history": [{"payment_id": GIFT, "amount": -500}]}
    result = check_reservation_changes(StaticInput(w, [], {"reservations": {"HATHAT": new}}))
    assert result.details == ["new reservation HATHAT was paid with an amount that is not positive"]


def test_a_refused_write_leaves_earlier_writes_of_the_episode_in_place(world):
    s = world.session(authenticated_user_id=AARAV)
    assert execute(s, "book_reservation", booking([FLIGHT], 1, [(CARD, 387)])).ok
    after_first = copy.deepcopy(s.changed())
    refused(s, "book_reservation", booking([FLIGHT, FLIGHT], 2, [(CARD, 387 * 4)]), "listed more than once")
    assert s.changed() == after_first
    assert s.get("flights", "HAT001").dates["2024-05-29"].available_seats["business"] == 4


@pytest.mark.parametrize(
    ("passenger", "fragment"),
    [
        ({"first_name": "", "last_name": "Doe", "dob": "1990-01-01"}, "first_name: Value error, a name must not"),
        ({"first_name": "Ann", "last_name": "  ", "dob": "1990-01-01"}, "last_name: Value error, a name must not"),
        ({"first_name": "Ann", "last_name": "Doe", "dob": "yesterday"}, "dob 'yesterday' is not a date"),
        ({"first_name": "Ann", "last_name": "Doe", "dob": "1990-02-30"}, "is not a date 'YYYY-MM-DD'"),
        ({"first_name": "Ann", "last_name": "Doe", "dob": "2031-01-01"}, "not a plausible date of birth"),
        ({"first_name": "Ann", "last_name": "Doe", "dob": "1850-01-01"}, "not a plausible date of birth"),
    ],
)
def test_a_passenger_without_a_name_or_a_real_date_of_birth_is_refused(world, passenger, fragment):
    s = world.session(authenticated_user_id=AARAV)
    args = {**booking([FLIGHT], 1, [(CARD, 387)]), "passengers": [passenger]}
    refused(s, "book_reservation", args, fragment)
    people = [passenger, {"first_name": "Bo", "last_name": "Doe", "dob": "1991-03-04"}]
    refused(s, "update_reservation_passengers", {"reservation_id": "BU71UY", "passengers": people}, fragment)


def test_the_passenger_record_holds_a_name_and_a_date_of_birth():
    from pydantic import ValidationError

    from pipeline.domains.airline.schema import Passenger

    assert Passenger(first_name="Ann", last_name="Doe", dob="1990-01-01").dob == "1990-01-01"
    with pytest.raises(ValidationError, match="not a date"):
        Passenger(first_name="Ann", last_name="Doe", dob="yesterday")
