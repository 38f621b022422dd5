"""Airline's words for the failure-mode rules.

No write takes an enumerated argument the policy lists (the cancellation reasons — change of plan, the airline
cancelled a flight, other — are asked for and checked, not passed to cancel_reservation), so there are no
choices. A reservation's status shows in its record ('cancelled'; none while active), flights' statuses in
get_flight_status. A reservation id (six letters and digits, e.g. 'ZFA04Y') has no marker that tells it from a
flight number or a word in capitals in free text, so no record reference is read from messages: status claims
are not checked in airline conversations.
"""

from __future__ import annotations

from pipeline.domains.airline.schema import FlightStatus
from pipeline.world.vocabulary import Vocabulary

FLIGHT_STATUSES: tuple[str, ...] = FlightStatus.__args__  # type: ignore[attr-defined]
RESERVATION_STATUSES: tuple[str, ...] = ("cancelled",)

VOCABULARY = Vocabulary(
    statuses=tuple(dict.fromkeys((*RESERVATION_STATUSES, *FLIGHT_STATUSES))),
    status_synonyms={"canceled": "cancelled"},
    record_key="reservation_id",
)
