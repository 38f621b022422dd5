"""Airline's words for the failure-mode rules.

The enumerated write arguments are the ones the policy lists: the cabin (basic economy, economy, business), the
trip type and the insurance answer — picks from a list, never invention. The cancellation reasons (change of
plan, the airline cancelled a flight, other) are asked for and checked, not passed to cancel_reservation. A
reservation's status shows in its record ('cancelled'; none while active), flights' statuses in
get_flight_status. A reservation id (six letters and digits, e.g. 'ZFA04Y') has no marker that tells it from a
flight number or a word in capitals in free text, so no record reference is read from messages: status claims
are not checked in airline conversations.
"""

from __future__ import annotations

from pipeline.domains.airline.schema import CABINS, FlightStatus
from pipeline.world import Vocabulary

FLIGHT_STATUSES: tuple[str, ...] = FlightStatus.__args__  # type: ignore[attr-defined]
RESERVATION_STATUSES: tuple[str, ...] = ("cancelled",)
WRITE_INTENTS = {
    "book_reservation": "book",
    "cancel_reservation": "cancel",
    "update_reservation_flights": "update_flights",
    "update_reservation_baggages": "update_baggages",
    "update_reservation_passengers": "update_passengers",
    "send_certificate": "send_certificate",
}

VOCABULARY = Vocabulary(
    choices={
        "cabin": frozenset(CABINS),
        "flight_type": frozenset({"one_way", "round_trip"}),
        "insurance": frozenset({"yes", "no"}),
    },
    statuses=tuple(dict.fromkeys((*RESERVATION_STATUSES, *FLIGHT_STATUSES))),
    status_synonyms={"canceled": "cancelled"},
    record_key="reservation_id",
    lookup_groups={
        "get_user_details": "user",
        "get_reservation_details": "reservation",
        "get_flight_status": "flight",
        "search_direct_flight": "flight",
        "search_onestop_flight": "flight",
    },
    write_intents=WRITE_INTENTS,
)
