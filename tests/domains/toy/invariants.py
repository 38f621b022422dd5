"""The studio's invariant: a booking only ever goes from 'booked' to 'cancelled'."""

from __future__ import annotations

from pipeline.grading.verdict import ComponentResult
from pipeline.world.domain import Invariant


def check_booking_transitions(inp) -> ComponentResult:
    base = inp.world.table("bookings")
    problems = [
        f"booking {k}: illegal change {base[k].status!r} -> {r.get('status')!r}"
        for k, r in sorted((inp.final_changed.get("bookings") or {}).items())
        if k not in base or (base[k].status, r.get("status")) not in {("booked", "cancelled"), ("booked", "booked")}
    ]
    return ComponentResult(name="booking_transitions", passed=not problems, details=problems)


INVARIANTS = [Invariant("booking_transitions", check_booking_transitions)]
