"""Airline invariants for the static checks: legal reservation changes, money ceilings, seats and balances."""

from __future__ import annotations

from pipeline.grading import ComponentResult
from pipeline.world import Invariant

_CENT = 0.005


def _result(name: str, problems: list[str]) -> ComponentResult:
    return ComponentResult(name=name, passed=not problems, details=problems)


def check_reservation_changes(inp) -> ComponentResult:
    """A cancelled reservation is never changed, a reservation keeps its passenger count and lists no flight twice,
    and a new one holds 1 to 5 passengers and was paid with positive amounts."""
    problems = []
    base = inp.world.table("reservations")
    for rid, rec in sorted((inp.final_changed.get("reservations") or {}).items()):
        before = base.get(rid)
        n = len(rec.get("passengers", []))
        legs = [(f.get("flight_number"), f.get("date")) for f in rec.get("flights", [])]
        if len(set(legs)) != len(legs):
            problems.append(f"reservation {rid} lists a flight more than once")
        if before is None:
            if not 1 <= n <= 5:
                problems.append(f"new reservation {rid} has {n} passengers")
            if any(not p["amount"] > 0 for p in rec.get("payment_history", [])):
                problems.append(f"new reservation {rid} was paid with an amount that is not positive")
            continue
        if before.status == "cancelled":
            if rec.get("status") != "cancelled":
                problems.append(f"reservation {rid}: a cancelled reservation was reopened")
            else:
                problems.append(f"reservation {rid}: a cancelled reservation was changed")
        if n != len(before.passengers):
            problems.append(f"reservation {rid}: passenger count changed {len(before.passengers)} -> {n}")
    return _result("reservation_changes", problems)


def check_refund_ceiling(inp) -> ComponentResult:
    """No reservation has refunded more to a payment method than was paid with it."""
    problems = []
    for rid, rec in sorted((inp.final_changed.get("reservations") or {}).items()):
        net: dict[str, float] = {}
        for p in rec.get("payment_history", []):
            net[p["payment_id"]] = net.get(p["payment_id"], 0.0) + p["amount"]
        problems += [
            f"reservation {rid}: {pid} refunded {-v:.2f} more than paid" for pid, v in net.items() if v < -_CENT
        ]
    return _result("refund_ceiling", problems)


def check_balances(inp) -> ComponentResult:
    """No gift card or certificate is left with a negative amount, and no flight with negative seats."""
    problems = []
    for uid, rec in sorted((inp.final_changed.get("users") or {}).items()):
        for mid, m in sorted(rec.get("payment_methods", {}).items()):
            if m.get("amount") is not None and m["amount"] < -_CENT:
                problems.append(f"user {uid}: {mid} amount {m['amount']:.2f} is negative")
    for number, rec in sorted((inp.final_changed.get("flights") or {}).items()):
        for day, fd in sorted(rec.get("dates", {}).items()):
            for cabin, seats in sorted((fd.get("available_seats") or {}).items()):
                if seats < 0:
                    problems.append(f"flight {number} {day}: {seats} {cabin} seats")
    return _result("balances", problems)


INVARIANTS: list[Invariant] = [
    Invariant("reservation_changes", check_reservation_changes),
    # graded only: τ²-bench's own gold (airline task 32) pays a cabin upgrade by card, then refunds a cheaper flight
    # change to that card, more than it paid with it (the reservation as a whole refunds less than it was paid)
    Invariant("refund_ceiling", check_refund_ceiling, enforced=False),
    Invariant("balances", check_balances),
]
