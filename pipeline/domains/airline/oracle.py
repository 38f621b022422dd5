"""The airline oracle: follows the airline policy and solves every generated airline task, with no model.

As in retail (`pipeline.domains.retail.oracle`, whose conversation primitives it reuses), it may read the task to know
what to do, but every value it writes has appeared earlier in a user message or a tool result, and every figure
it states comes from a tool. It identifies the customer first, reads the reservation before anything else, checks
each policy rule from what the tools showed (basic economy flights never change, bags are never removed, the
number of passengers never changes, a cancellation needs one of the policy's grounds), lists the details and
waits for an explicit yes before each write, and refuses out-of-policy requests with the reason.

The hooks `_confirm`, `_write_action` and `_perform` are where `pipeline.domains.airline.flawed` plants its
failure modes.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime, timedelta

from pipeline.agents import YES as _YES
from pipeline.agents import ScriptedEpisode, Steps, appears_in, evidence
from pipeline.agents.scripted import phrases as P
from pipeline.dataset import Action, Request
from pipeline.domains.airline import phrases as A
from pipeline.domains.airline.tools import FLOWN, NOW
from pipeline.domains.airline.vocabulary import VOCABULARY, WRITE_INTENTS
from pipeline.rollout import EpisodeInfo

log = logging.getLogger(__name__)
USER_ID_RE = re.compile(r"\b[a-z]+_[a-z]+_\d+\b")
RECORD_READS = ("get_reservation_details", "get_flight_status")
COVERED = ("health", "weather")


class AirlineOracle:
    name = "oracle"

    def start(self, info: EpisodeInfo) -> AirlineOracleEpisode:
        return AirlineOracleEpisode(info)


class AirlineOracleEpisode(ScriptedEpisode):
    def __init__(self, info: EpisodeInfo) -> None:
        self.flight_status: dict[tuple[str, str], str] = {}
        self.reservations: dict[str, dict] = {}
        super().__init__(info)

    # ---- the conversation ---------------------------------------------------------------------------------
    def _authenticate(self, question: str = A.ASK_USER_ID) -> Steps:
        reply = yield from self._say(question)
        for _ in range(5):
            found = USER_ID_RE.search(reply)
            if found is None:
                reply = yield from self._say(A.ASK_USER_ID)
                continue
            result = yield from self._call("get_user_details", {"user_id": found.group(0)})
            if not result.error:
                self.user_id = found.group(0)
                return
            reply = yield from self._say(A.NOT_FOUND_USER)

    def _write(self, i: int) -> Action | None:
        return next((a for a in self._actions(i) if a.name in WRITE_INTENTS), None)

    def _read(self, a: Action) -> Steps:
        result = yield from self._call(a.name, dict(a.arguments))
        if result.error:
            return
        if a.name == "get_flight_status":
            self.flight_status[(a.arguments["flight_number"], a.arguments["date"])] = (result.content or "").strip()
        elif a.name == "get_reservation_details":
            self.reservations[a.arguments["reservation_id"]] = json.loads(result.content or "{}")

    def _handle(self, i: int, req: Request, details: str | None = None, confirmed: bool = False) -> Steps:
        write = self._write(i)
        rid = req.record_id
        if rid and not any(rid in (m.content or "") for m in self.messages if m.role == "user"):
            yield from self._say(A.ASK_RESERVATION)  # an under-specified request: never pick a reservation for them
        reads = [a for a in self._actions(i) if a.name not in WRITE_INTENTS]
        for a in reads:
            if a.name in RECORD_READS:
                yield from self._read(a)
        reason = self._check_record(req)
        if reason:
            return (yield from self._finish(P.refusal(reason), reason))
        topics = A.TOPICS.get(req.intent, [])
        if details is None and topics:
            details = yield from self._say(A.ask_details(req.intent, topics))
        for a in reads:
            if a.name not in RECORD_READS:
                yield from self._read(a)
        yield from self._conclude(i, req, write, details or "", confirmed)

    # ---- policy checks, from what the tools showed -------------------------------------------------------
    def _check_record(self, req: Request) -> str | None:
        res = self.reservations.get(req.record_id or "")
        said = req.utterance.lower()
        if res is None:
            return None
        if res.get("status") == "cancelled":
            return f"reservation {req.record_id} is already cancelled."
        if req.intent == "update_flights" and res["cabin"] == "basic_economy":
            return f"reservation {req.record_id} is in basic economy, and basic economy flights can never be changed."
        if req.intent == "update_baggages" and ("remove" in said or "reduce" in said):
            return "checked bags can be added to a reservation, but never removed."
        if req.intent == "update_passengers" and "add a passenger" in said:
            return "the number of passengers of a reservation can never change; passengers can only be replaced."
        return None

    def _check_details(self, req: Request, details: str) -> str | None:
        if req.intent != "cancel":
            return None
        res = self.reservations.get(req.record_id or "")
        if res is None:
            return None
        statuses = [self.flight_status.get((f["flight_number"], f["date"])) for f in res["flights"]]
        if any(s in FLOWN for s in statuses):
            return "part of this trip has already been flown, so it cannot be cancelled."
        recent = NOW - datetime.fromisoformat(res["created_at"]) <= timedelta(hours=24)
        covered = res["insurance"] == "yes" and any(w in details.lower() for w in COVERED)
        if recent or "cancelled" in statuses or res["cabin"] == "business" or covered:
            return None
        return (
            f"reservation {req.record_id} was booked more than 24 hours ago, none of its flights was cancelled by the"
            f" airline, it is in {res['cabin'].replace('_', ' ')}, and "
            + (
                "its travel insurance does not cover this reason."
                if res["insurance"] == "yes"
                else "it has no travel insurance."
            )
        )

    # ---- confirmation, write and report --------------------------------------------------------------------
    def _confirm_action(self, i: int, write: Action) -> Action:
        return write

    def _confirm(self, i: int, req: Request, write: Action) -> Steps:
        action = self._confirm_action(i, write)
        text = A.confirm(WRITE_INTENTS[action.name], req.record_id, self._lines(action))
        reply = yield from self._say(text)
        return bool(_YES.search(reply)) and not reply.lower().lstrip().startswith("no")

    def _lines(self, action: Action) -> list[str]:
        a, name = action.arguments, action.name
        if name == "book_reservation":
            paid = "; ".join(f"{P.money(p['amount'])} with {p['payment_id']}" for p in a["payment_methods"])
            return [
                f"{a['flight_type'].replace('_', ' ')} {a['origin']} to {a['destination']}: {A.flights(a['flights'])}",
                f"cabin: {a['cabin'].replace('_', ' ')}",
                f"passengers: {A.people(a['passengers'])}",
                f"checked bags: {a['total_baggages']} ({a['nonfree_baggages']} paid)",
                f"travel insurance: {a['insurance']}",
                f"payment: {paid}",
            ]
        if name == "cancel_reservation":
            return ["every payment is refunded to the method it was paid with"]
        if name == "update_reservation_flights":
            return [f"new flights: {A.flights(a['flights'])} in {a['cabin'].replace('_', ' ')}",
                    f"any difference paid with or refunded to {a['payment_id']}"]  # fmt: skip
        if name == "update_reservation_baggages":
            return [
                f"checked bags: {a['total_baggages']} ({a['nonfree_baggages']} paid)",
                f"payment: {a['payment_id']}",
            ]
        if name == "update_reservation_passengers":
            return [f"passengers: {A.people(a['passengers'])}"]
        return [f"a travel certificate of {P.money(a['amount'])} for user {a['user_id']}"]

    def _write_action(self, i: int, write: Action) -> Action:
        return write

    def _perform(self, i: int, req: Request, write: Action) -> Steps:
        action = self._write_action(i, write)
        texts = evidence(self.messages)
        missing = [
            k for k, v in action.arguments.items() if k not in VOCABULARY.choices and not appears_in(_flat(v), texts)
        ]
        if missing:
            log.warning("task %s: write %s argument(s) %s not grounded", self.task.id, action.name, missing)
        result = yield from self._call(action.name, dict(action.arguments))
        if result.error:
            error = (result.content or "").removeprefix("Error: ").rstrip(".") + "."
            return (yield from self._finish(P.failed(result.content or ""), error))
        content = result.content or ""
        yield from self._finish(
            A.report(action.name, content if action.name == "send_certificate" else json.loads(content))
        )


def _flat(value) -> list:
    """Scalars of an argument (passengers, flights and payments are lists of dicts)."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in _flat(v)]
    if isinstance(value, list):
        return [s for v in value for s in _flat(v)]
    return [value]
