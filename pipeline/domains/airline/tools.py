"""The airline tools, with τ²-bench airline's semantics. Each docstring is exactly what the agent model is shown.

Authorization lives here, as in retail: `get_user_details` identifies the customer the conversation serves, and
private look-ups and writes are allowed only for that customer's records. Every precondition is checked before
anything changes, and the generic `execute` rolls back a call that fails part-way, so a refused call changes
nothing. Beyond τ²-bench, the writes refuse what the policy forbids and the database can tell (cancelling outside
the allowed cases, changing a basic-economy itinerary, removing bags).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import date as Date
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, field_validator

from pipeline.domains.airline.schema import (
    NOW,
    Cabin,
    Passenger,
    Payment,
    PaymentMethod,
    Reservation,
    ReservationFlight,
    User,
    birth_date,
    person_name,
)
from pipeline.strict import Strict
from pipeline.world import ExpressionError, Session, ToolError, ToolRegistry, dump_record, evaluate

TOOLS = ToolRegistry()
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_NUMBERS = (3221322, 3221323, 3221324)
INSURANCE_PER_PASSENGER = 30
BAG_FEE = 50
MAX_PASSENGERS = 5
FLOWN = frozenset({"flying", "landed"})
AIRPORTS = {
    "SFO": "San Francisco", "JFK": "New York", "LAX": "Los Angeles", "ORD": "Chicago", "DFW": "Dallas",
    "DEN": "Denver", "SEA": "Seattle", "ATL": "Atlanta", "MIA": "Miami", "BOS": "Boston", "PHX": "Phoenix",
    "IAH": "Houston", "LAS": "Las Vegas", "MCO": "Orlando", "EWR": "Newark", "CLT": "Charlotte",
    "MSP": "Minneapolis", "DTW": "Detroit", "PHL": "Philadelphia", "LGA": "LaGuardia",
}  # fmt: skip


class FlightRef(Strict):
    flight_number: str
    date: str


class PaymentUse(Strict):
    payment_id: str
    amount: int | float


# A passenger as a write names one, checked as the record is (a name, a plausible date of birth). No docstring: it
# would join the schema the model is shown, which the validators leave unchanged.
class PassengerArg(Strict):
    first_name: str
    last_name: str
    dob: str

    _names = field_validator("first_name", "last_name")(person_name)
    _dob = field_validator("dob")(birth_date)


# ---- helpers --------------------------------------------------------------------------------
def _require_auth(s: Session, user_id: str, what: str) -> None:
    if not s.authorize:
        return
    if s.authenticated_user_id is None:
        raise ToolError(
            f"cannot {what}: no customer is identified yet; look up the customer's user id first", "unauthorized"
        )
    if user_id != s.authenticated_user_id:
        raise ToolError(
            f"cannot {what}: it belongs to another customer than the one identified in this conversation",
            "unauthorized",
        )


def _user(s: Session, user_id: str, what: str):
    user = s.get("users", user_id)
    if user is None:
        raise ToolError(f"user {user_id} not found", "not_found")
    _require_auth(s, user_id, what)
    return user


def _reservation(s: Session, reservation_id: str, what: str) -> Reservation:
    res = s.get("reservations", reservation_id)
    if res is None:
        raise ToolError(f"reservation {reservation_id} not found", "not_found")
    _require_auth(s, res.user_id, what)
    return res


def _flight_date(s: Session, flight_number: str, day: str):
    flight = s.get("flights", flight_number)
    if flight is None:
        raise ToolError(f"flight {flight_number} not found", "not_found")
    if day not in flight.dates:
        raise ToolError(f"flight {flight_number} does not fly on {day}", "not_found")
    return flight, flight.dates[day]


def _bookable(s: Session, ref: FlightRef, cabin: str, seats: int):
    flight, fd = _flight_date(s, ref.flight_number, ref.date)
    if fd.status != "available":
        raise ToolError(f"flight {ref.flight_number} on {ref.date} is {fd.status} and cannot be booked")
    if fd.available_seats[cabin] < seats:
        raise ToolError(f"not enough {cabin} seats on flight {ref.flight_number} on {ref.date}")
    return flight, fd


def _distinct(flights: list[FlightRef]) -> None:
    """A flight on a date appears once in an itinerary (listed twice, it would be sold twice)."""
    seen = Counter((f.flight_number, f.date) for f in flights)
    twice = sorted(f"{n} on {d}" for (n, d), k in seen.items() if k > 1)
    if twice:
        raise ToolError(f"flight {', '.join(twice)} is listed more than once", "invalid_arguments")


def _flown(s: Session, res: Reservation) -> bool:
    return any(_flight_date(s, f.flight_number, f.date)[1].status in FLOWN for f in res.flights)


def _charge(s: Session, user_id: str, payment_id: str, amount: int | float) -> Payment | None:
    """Payment for a change: a credit card or a gift card that covers it (no certificates); None when free."""
    method = s.get("users", user_id).payment_methods.get(payment_id)
    if method is None:
        raise ToolError(f"payment method {payment_id} not found in the customer's profile", "not_found")
    if method.source == "certificate":
        raise ToolError("a travel certificate cannot pay for a change to a reservation")
    if method.source == "gift_card" and (method.amount or 0) < amount:
        raise ToolError(f"gift card {payment_id} balance ({method.amount}) does not cover {amount}")
    if method.source == "gift_card":
        card = s.edit("users", user_id).payment_methods[payment_id]
        card.amount = card.amount - amount
    return Payment(payment_id=payment_id, amount=amount) if amount != 0 else None


def _json(value) -> str:
    if isinstance(value, BaseModel):
        value = dump_record(value)
    return json.dumps(value)


def _direct(s: Session, day: str, origin: str | None, destination: str | None, after: str | None = None) -> list:
    found = []
    for number in s.keys("flights"):
        f = s.get("flights", number)
        fd = f.dates.get(day)
        if fd is None or fd.status != "available":
            continue
        if (origin and f.origin != origin) or (destination and f.destination != destination):
            continue
        if after is not None and f.scheduled_departure_time_est < after:
            continue
        found.append(
            {
                "flight_number": f.flight_number,
                "origin": f.origin,
                "destination": f.destination,
                "status": "available",
                "scheduled_departure_time_est": f.scheduled_departure_time_est,
                "scheduled_arrival_time_est": f.scheduled_arrival_time_est,
                "date": day,
                "available_seats": dict(fd.available_seats),
                "prices": dict(fd.prices),
            }
        )
    return found


# ---- look-ups -------------------------------------------------------------------------------
@TOOLS.register("identity", private=True)
def get_user_details(s: Session, user_id: str) -> str:
    """Get the details of a user, including their reservations. This identifies the customer you are serving.

    Args:
        user_id: The user ID, such as 'sara_doe_496'.
    """
    user = s.get("users", user_id)
    if user is None:
        raise ToolError(f"user {user_id} not found", "not_found")
    if s.authorize and s.authenticated_user_id not in (None, user_id):
        raise ToolError(
            "this conversation already serves another customer; only one customer can be helped per conversation",
            "unauthorized",
        )
    s.authenticated_user_id = user_id
    return _json(user)


@TOOLS.register("read", private=True)
def get_reservation_details(s: Session, reservation_id: str) -> str:
    """Get the details of a reservation.

    Args:
        reservation_id: The reservation ID, such as '8JX2WO'.
    """
    return _json(_reservation(s, reservation_id, "read this reservation"))


@TOOLS.register("read")
def list_all_airports(s: Session) -> str:
    """List every airport served: IATA code and city."""
    return json.dumps([{"iata": code, "city": city} for code, city in AIRPORTS.items()])


@TOOLS.register("read")
def search_direct_flight(s: Session, origin: str, destination: str, date: str) -> str:
    """Search for direct flights between two cities on a specific date.

    Args:
        origin: The origin city airport in three letters, such as 'JFK'.
        destination: The destination city airport in three letters, such as 'LAX'.
        date: The date of the flight in the format 'YYYY-MM-DD', such as '2024-01-01'.
    """
    return json.dumps(_direct(s, date, origin, destination))


@TOOLS.register("read")
def search_onestop_flight(s: Session, origin: str, destination: str, date: str) -> str:
    """Search for one-stop flights between two cities on a specific date.

    Args:
        origin: The origin city airport in three letters, such as 'JFK'.
        destination: The destination city airport in three letters, such as 'LAX'.
        date: The date of the flight in the format 'YYYY-MM-DD', such as '2024-05-01'.
    """
    try:
        day = Date.fromisoformat(date)
    except ValueError:
        raise ToolError(f"date {date!r} is not in the format YYYY-MM-DD", "invalid_arguments") from None
    pairs = []
    for first in _direct(s, date, origin, None):
        overnight = "+1" in first["scheduled_arrival_time_est"]
        second_day = (day + timedelta(days=1)).isoformat() if overnight else date
        after = None if overnight else first["scheduled_arrival_time_est"]
        pairs += [[first, second] for second in _direct(s, second_day, first["destination"], destination, after)]
    return json.dumps(pairs)


@TOOLS.register("read")
def get_flight_status(s: Session, flight_number: str, date: str) -> str:
    """Get the status of a flight on a date.

    Args:
        flight_number: The flight number, such as 'HAT001'.
        date: The date of the flight, such as '2024-05-01'.
    """
    return _flight_date(s, flight_number, date)[1].status


@TOOLS.register("generic")
def calculate(s: Session, expression: str) -> str:
    """Calculate the result of an arithmetic expression (numbers, + - * /, parentheses).

    Args:
        expression: The expression to calculate, such as '2 + 2'.
    """
    try:
        return str(round(evaluate(expression), 2))
    except ExpressionError as exc:
        raise ToolError(str(exc), "invalid_arguments") from None


@TOOLS.register("transfer")
def transfer_to_human_agents(s: Session, summary: str) -> str:
    """Transfer the user to a human agent, with a summary of the user's issue.

    Only transfer if the user explicitly asks for a human agent, or the request cannot be handled within the
    policy and the available tools.

    Args:
        summary: A summary of the user's issue.
    """
    s.transferred = True
    return "Transfer successful"


# ---- writes ---------------------------------------------------------------------------------
@TOOLS.register("write", private=True)
def book_reservation(
    s: Session,
    user_id: str,
    origin: str,
    destination: str,
    flight_type: Literal["one_way", "round_trip"],
    cabin: Cabin,
    flights: list[FlightRef],
    passengers: list[PassengerArg],
    payment_methods: list[PaymentUse],
    total_baggages: int,
    nonfree_baggages: int,
    insurance: Literal["yes", "no"],
) -> str:
    """Book a reservation, after listing the details and getting the user's explicit confirmation.

    Args:
        user_id: The ID of the user to book the reservation, such as 'sara_doe_496'.
        origin: The IATA code for the origin city, such as 'SFO'.
        destination: The IATA code for the destination city, such as 'JFK'.
        flight_type: 'one_way' or 'round_trip'.
        cabin: 'basic_economy', 'economy' or 'business'.
        flights: Each flight segment: {'flight_number': 'HAT001', 'date': '2024-05-01'}.
        passengers: Each passenger: {'first_name', 'last_name', 'dob' ('YYYY-MM-DD')}.
        payment_methods: Each payment: {'payment_id': a method in the user's profile, 'amount'}.
        total_baggages: The total number of checked bags.
        nonfree_baggages: The number of checked bags that are paid for.
        insurance: 'yes' or 'no'.
    """
    user = _user(s, user_id, "book for this user")
    n = len(passengers)
    if not flights:
        raise ToolError("no flights given", "invalid_arguments")
    if not 1 <= n <= MAX_PASSENGERS:
        raise ToolError(f"a reservation has 1 to {MAX_PASSENGERS} passengers, not {n}")
    if total_baggages < nonfree_baggages or nonfree_baggages < 0:
        raise ToolError("nonfree_baggages must be between 0 and total_baggages", "invalid_arguments")
    _distinct(flights)
    for pay in payment_methods:
        if not pay.amount > 0:
            raise ToolError(f"payment amounts must be positive; {pay.payment_id} has {pay.amount}", "invalid_arguments")
    segments, dates = [], []
    total = 0
    for ref in flights:
        flight, fd = _bookable(s, ref, cabin, n)
        price = fd.prices[cabin]
        segments.append(
            ReservationFlight(
                flight_number=flight.flight_number,
                origin=flight.origin,
                destination=flight.destination,
                date=ref.date,
                price=price,
            )
        )
        dates.append(ref)
        total += price * n
    total += (INSURANCE_PER_PASSENGER * n if insurance == "yes" else 0) + BAG_FEE * nonfree_baggages
    _check_payments(user, payment_methods, total)
    new_id = next((r for r in NEW_RESERVATION_IDS if s.get("reservations", r) is None), None)
    if new_id is None:
        raise ToolError("too many new reservations in one conversation")
    for pay in payment_methods:
        method = user.payment_methods[pay.payment_id]
        if method.source == "gift_card":
            card = s.edit("users", user_id).payment_methods[pay.payment_id]
            card.amount = card.amount - pay.amount
        elif method.source == "certificate":
            edited = s.edit("users", user_id)
            edited.payment_methods = {k: v for k, v in edited.payment_methods.items() if k != pay.payment_id}
    for ref in dates:
        fd = s.edit("flights", ref.flight_number).dates[ref.date]
        fd.available_seats = {**fd.available_seats, cabin: fd.available_seats[cabin] - n}
    reservation = Reservation(
        reservation_id=new_id,
        user_id=user_id,
        origin=origin,
        destination=destination,
        flight_type=flight_type,
        cabin=cabin,
        flights=segments,
        passengers=[Passenger(**p.model_dump()) for p in passengers],
        payment_history=[Payment(payment_id=p.payment_id, amount=p.amount) for p in payment_methods],
        created_at=NOW.isoformat(),
        total_baggages=total_baggages,
        nonfree_baggages=nonfree_baggages,
        insurance=insurance,
    )
    s.create("reservations", new_id, reservation)
    edited = s.edit("users", user_id)
    edited.reservations = [*edited.reservations, new_id]
    return _json(reservation)


def _check_payments(user: User, payment_methods: list[PaymentUse], total: float) -> None:
    """A booking's payments: methods in the customer's profile, with the balance to cover their amounts, at
    most one certificate, one credit card and three gift cards, adding up to the total price."""
    kinds: Counter[str] = Counter()
    for pay in payment_methods:
        method: PaymentMethod | None = user.payment_methods.get(pay.payment_id)
        if method is None:
            raise ToolError(f"payment method {pay.payment_id} not found in the customer's profile", "not_found")
        kinds[method.source] += 1
        if method.source in ("gift_card", "certificate") and (method.amount or 0) < pay.amount:
            raise ToolError(f"not enough balance on {pay.payment_id} ({method.amount}) for {pay.amount}")
    if kinds["certificate"] > 1 or kinds["credit_card"] > 1 or kinds["gift_card"] > 3:
        raise ToolError("a reservation takes at most one certificate, one credit card and three gift cards")
    paid = sum(p.amount for p in payment_methods)
    if paid != total:
        raise ToolError(f"payments add up to {paid}, but the total price is {total}")


def cancel_refusal(s: Session, res: Reservation) -> str | None:
    """Why the policy forbids cancelling this reservation (None: it may be cancelled, given a covered reason
    where only the insurance allows it — the reason is the agent's to check)."""
    if res.status == "cancelled":
        return f"reservation {res.reservation_id} is already cancelled"
    if _flown(s, res):
        return "part of this trip has already been flown; it cannot be cancelled (transfer to a human agent)"
    recent = NOW - datetime.fromisoformat(res.created_at) <= timedelta(hours=24)
    airline_cancelled = any(_flight_date(s, f.flight_number, f.date)[1].status == "cancelled" for f in res.flights)
    if recent or airline_cancelled or res.cabin == "business" or res.insurance == "yes":
        return None
    return (
        "this reservation cannot be cancelled: it was booked more than 24 hours ago, no flight was cancelled by the"
        f" airline, the cabin is {res.cabin} and it has no travel insurance"
    )


@TOOLS.register("write", private=True)
def cancel_reservation(s: Session, reservation_id: str) -> str:
    """Cancel the whole reservation, after the user's explicit confirmation; every payment is refunded.

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
    """
    res = _reservation(s, reservation_id, "cancel this reservation")
    why = cancel_refusal(s, res)
    if why:
        raise ToolError(why)
    res = s.edit("reservations", reservation_id)
    refunds = [Payment(payment_id=p.payment_id, amount=-p.amount) for p in res.payment_history]
    res.payment_history = res.payment_history + refunds
    res.status = "cancelled"
    return _json(res)


@TOOLS.register("write", private=True)
def update_reservation_baggages(
    s: Session, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
) -> str:
    """Update the checked bags of a reservation (bags can be added, not removed), after explicit confirmation.

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
        total_baggages: The updated total number of checked bags.
        nonfree_baggages: The updated number of checked bags that are paid for.
        payment_id: The payment method id in the user's profile, such as 'credit_card_7815826' or 'gift_card_7815826'.
    """
    res = _reservation(s, reservation_id, "change this reservation")
    if res.status == "cancelled":
        raise ToolError(f"reservation {reservation_id} is cancelled")
    if total_baggages < res.total_baggages or nonfree_baggages < res.nonfree_baggages:
        raise ToolError("checked bags can be added but not removed")
    if total_baggages < nonfree_baggages:
        raise ToolError("nonfree_baggages cannot exceed total_baggages", "invalid_arguments")
    payment = _charge(s, res.user_id, payment_id, BAG_FEE * max(0, nonfree_baggages - res.nonfree_baggages))
    res = s.edit("reservations", reservation_id)
    if payment is not None:
        res.payment_history = [*res.payment_history, payment]
    res.total_baggages, res.nonfree_baggages = total_baggages, nonfree_baggages
    return _json(res)


@TOOLS.register("write", private=True)
def update_reservation_flights(
    s: Session, reservation_id: str, cabin: Cabin, flights: list[FlightRef], payment_id: str
) -> str:
    """Change the flights and/or cabin of a reservation, after explicit confirmation.

    Segments kept unchanged keep the price paid; new segments are priced now. The difference is paid with, or
    refunded to, the given payment method (a credit card or gift card).

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
        cabin: The cabin class of the whole reservation: 'basic_economy', 'economy' or 'business'.
        flights: Every flight segment of the ENTIRE new itinerary, changed or not: {'flight_number', 'date'}.
        payment_id: The payment method id in the user's profile, such as 'credit_card_7815826' or 'gift_card_7815826'.
    """
    res = _reservation(s, reservation_id, "change this reservation")
    if res.status == "cancelled":
        raise ToolError(f"reservation {reservation_id} is cancelled")
    if not flights:
        raise ToolError("no flights given", "invalid_arguments")
    _distinct(flights)
    n = len(res.passengers)
    kept = {(f.flight_number, f.date): f for f in res.flights}
    itinerary_changed = {(f.flight_number, f.date) for f in flights} != set(kept)
    if itinerary_changed and res.cabin == "basic_economy":
        raise ToolError("the flights of a basic economy reservation cannot be changed (its cabin can)")
    if cabin != res.cabin and _flown(s, res):
        raise ToolError("the cabin cannot be changed once part of the trip has been flown")
    segments: list[ReservationFlight] = []
    total: float = 0
    for ref in flights:
        old = kept.get((ref.flight_number, ref.date))
        if old is not None and cabin == res.cabin:
            segments.append(old)
            total += old.price * n
            continue
        flight, fd = _bookable(s, ref, cabin, n)
        seg = ReservationFlight(
            flight_number=flight.flight_number,
            origin=flight.origin,
            destination=flight.destination,
            date=ref.date,
            price=fd.prices[cabin],
        )
        segments.append(seg)
        total += seg.price * n
    if itinerary_changed and (segments[0].origin, segments[-1].destination) != _ends(res):
        raise ToolError("a change of flights must keep the trip's origin and destination")
    total -= sum(f.price for f in res.flights) * n
    payment = _charge(s, res.user_id, payment_id, total)
    res = s.edit("reservations", reservation_id)
    if payment is not None:
        res.payment_history = [*res.payment_history, payment]
    res.flights, res.cabin = segments, cabin
    return _json(res)


def _ends(res: Reservation) -> tuple[str, str]:
    """First departure and last arrival of an itinerary (a round trip ends where it started)."""
    return res.flights[0].origin, res.flights[-1].destination


@TOOLS.register("write", private=True)
def update_reservation_passengers(s: Session, reservation_id: str, passengers: list[PassengerArg]) -> str:
    """Update the passengers of a reservation (the number of passengers cannot change), after confirmation.

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
        passengers: Every passenger of the reservation: {'first_name', 'last_name', 'dob' ('YYYY-MM-DD')}.
    """
    res = _reservation(s, reservation_id, "change this reservation")
    if res.status == "cancelled":
        raise ToolError(f"reservation {reservation_id} is cancelled")
    if len(passengers) != len(res.passengers):
        raise ToolError(f"the reservation has {len(res.passengers)} passengers; the number cannot change")
    res = s.edit("reservations", reservation_id)
    res.passengers = [Passenger(**p.model_dump()) for p in passengers]
    return _json(res)


@TOOLS.register("write", private=True)
def send_certificate(s: Session, user_id: str, amount: int) -> str:
    """Send a travel certificate to a user as compensation. Be careful: only when the policy allows it.

    Args:
        user_id: The ID of the user, such as 'sara_doe_496'.
        amount: The amount of the certificate in dollars.
    """
    user = _user(s, user_id, "send a certificate to this user")
    if amount <= 0:
        raise ToolError("the amount must be positive", "invalid_arguments")
    new_id = next(
        (f"certificate_{n}" for n in NEW_CERTIFICATE_NUMBERS if f"certificate_{n}" not in user.payment_methods), None
    )
    if new_id is None:
        raise ToolError("too many certificates sent in one conversation")
    edited = s.edit("users", user_id)
    edited.payment_methods = {
        **edited.payment_methods,
        new_id: PaymentMethod(source="certificate", id=new_id, amount=amount),
    }
    return f"Certificate {new_id} added to user {user_id} with amount {amount}."
