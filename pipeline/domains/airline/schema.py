"""The airline data model, field-compatible with τ²-bench airline's db.json.

Records keep τ²-bench's field names, so a τ²-bench airline directory loads unchanged and a replayed end state
compares with theirs record for record. Money is kept as given (whole dollars in reservations, cents possible
on gift cards and certificates), hence `int | float`.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Literal

from pydantic import Field, field_validator, model_validator

from pipeline.world import Record

Cabin = Literal["basic_economy", "economy", "business"]
CABINS: tuple[str, ...] = Cabin.__args__  # type: ignore[attr-defined]
FlightStatus = Literal["available", "on time", "delayed", "flying", "landed", "cancelled"]
Membership = Literal["regular", "silver", "gold"]
Money = int | float
NOW = datetime(2024, 5, 15, 15, 0, 0)  # the policy's "current time"
EARLIEST_DOB = date(1900, 1, 1)
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def person_name(value: str) -> str:
    """A passenger's first or last name: some text, not blank."""
    if not value.strip():
        raise ValueError("a name must not be empty")
    return value


def birth_date(value: str) -> str:
    """A date of birth: 'YYYY-MM-DD', a real day between EARLIEST_DOB and today (NOW)."""
    try:
        day = date.fromisoformat(value) if ISO_DATE.fullmatch(value) else None
    except ValueError:
        day = None
    if day is None:
        raise ValueError(f"dob {value!r} is not a date 'YYYY-MM-DD'")
    if not EARLIEST_DOB <= day <= NOW.date():
        raise ValueError(f"dob {value} is not a plausible date of birth ({EARLIEST_DOB} to {NOW.date()})")
    return value


class FlightDate(Record):
    """One date of a flight: bookable ('available', with seats and prices) or past / in progress / cancelled."""

    status: FlightStatus
    available_seats: dict[Cabin, int] | None = None
    prices: dict[Cabin, Money] | None = None
    actual_departure_time_est: str | None = None
    actual_arrival_time_est: str | None = None
    estimated_departure_time_est: str | None = None
    estimated_arrival_time_est: str | None = None

    @model_validator(mode="after")
    def _bookable_has_seats(self) -> FlightDate:
        if self.status == "available" and (self.available_seats is None or self.prices is None):
            raise ValueError("an available flight date needs available_seats and prices")
        return self


class Flight(Record):
    flight_number: str = Field(description="e.g. 'HAT001'.")
    origin: str = Field(description="IATA code of the departure airport.")
    destination: str = Field(description="IATA code of the arrival airport.")
    scheduled_departure_time_est: str = Field(description="'HH:MM:SS' local time.")
    scheduled_arrival_time_est: str = Field(description="'HH:MM:SS', with '+1' when it lands the next day.")
    dates: dict[str, FlightDate] = Field(description="'YYYY-MM-DD' → that date's status.")


class Name(Record):
    first_name: str
    last_name: str


class Address(Record):
    address1: str
    address2: str
    city: str
    country: str
    state: str
    zip: str


class PaymentMethod(Record):
    source: Literal["credit_card", "gift_card", "certificate"]
    id: str
    brand: str | None = None
    last_four: str | None = None
    amount: Money | None = Field(default=None, description="Remaining value (gift cards and certificates).")


class Passenger(Record):
    first_name: str
    last_name: str
    dob: str = Field(description="Date of birth, 'YYYY-MM-DD'.")

    _names = field_validator("first_name", "last_name")(person_name)
    _dob = field_validator("dob")(birth_date)


class User(Record):
    user_id: str
    name: Name
    address: Address
    email: str
    dob: str
    payment_methods: dict[str, PaymentMethod]
    saved_passengers: list[Passenger]
    membership: Membership
    reservations: list[str]


class ReservationFlight(Record):
    flight_number: str
    origin: str
    destination: str
    date: str
    price: Money = Field(description="Price per passenger paid for this segment.")


class Payment(Record):
    payment_id: str = Field(description="The user's payment method id.")
    amount: Money = Field(description="Positive: paid; negative: refunded.")


class Reservation(Record):
    reservation_id: str
    user_id: str
    origin: str
    destination: str
    flight_type: Literal["one_way", "round_trip"]
    cabin: Cabin
    flights: list[ReservationFlight]
    passengers: list[Passenger]
    payment_history: list[Payment]
    created_at: str = Field(description="'YYYY-MM-DDTHH:MM:SS'.")
    total_baggages: int
    nonfree_baggages: int
    insurance: Literal["yes", "no"]
    status: Literal["cancelled"] | None = None


class AirlineDB(Record):
    flights: dict[str, Flight]
    users: dict[str, User]
    reservations: dict[str, Reservation]


TABLES: dict[str, type[Record]] = {"flights": Flight, "users": User, "reservations": Reservation}
