"""What the airline templates read the world through, and the drafts they return.

Every value a template uses comes from the world's records (read once here through `World.query`), so a template
never invents a reservation, a flight, a price or a payment method. `Ctx` is the airline grounding of the
synthesis kit (`pipeline.authoring.kit.Grounding`) and of the plain task generator alike. The policy's figures (free
bags, bag fee, compensation per passenger) are here once, for the templates and the oracle alike.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import cast

from pipeline.authoring import Draft, act
from pipeline.dataset import Request
from pipeline.domains.airline.schema import Flight, PaymentMethod, Reservation, User
from pipeline.domains.airline.tools import BAG_FEE, FLOWN, NOW
from pipeline.world import World

# free checked bags per passenger: membership → cabin → bags (the policy's table)
FREE_BAGS = {
    "regular": {"basic_economy": 0, "economy": 1, "business": 2},
    "silver": {"basic_economy": 1, "economy": 2, "business": 3},
    "gold": {"basic_economy": 2, "economy": 3, "business": 4},
}
CANCELLED_FLIGHT_CERTIFICATE = 100  # per passenger, when the airline cancelled a flight and the customer complains
COVERED_REASON = "I've fallen ill and can't travel, which is a health reason."
PLAIN_REASON = "My plans changed."
__all__ = ["BAG_FEE", "FREE_BAGS", "Ctx", "Draft", "act", "draft"]


def draft(template: str, req: Request, goal: str, reads: list, write, why: str = "") -> Draft:
    """A request the agent carries out, or (expect 'refused') one whose write the policy forbids.

    Its records are the reservation it is about ('user' for the profile itself); its entities that reservation."""
    records = (req.record_id,) if req.record_id else ("user",)
    entities = 1 if req.record_id else 0
    if req.expect == "refused":
        return Draft(template, req, f"{goal}; {why}, so the agent must refuse.", reads, None, write, records, entities)
    return Draft(template, req, f"{goal}.", reads, write, None, records, entities)


def describe_payment(method: PaymentMethod | dict, methods: dict) -> str:
    """How a customer names a payment method, unambiguous among theirs: 'visa credit card ending in 7447'."""
    get = method.get if isinstance(method, dict) else lambda k: getattr(method, k)
    same = [m for m in methods.values() if (m.get("source") if isinstance(m, dict) else m.source) == get("source")]
    if get("source") == "credit_card":
        twins = [
            m
            for m in same
            if (m.get("last_four") if isinstance(m, dict) else m.last_four) == get("last_four")
            and (m.get("brand") if isinstance(m, dict) else m.brand) == get("brand")
        ]
        if len(twins) == 1:
            return f"{get('brand')} credit card ending in {get('last_four')}"
    return f"{str(get('source')).replace('_', ' ')} {get('id')}"


class Ctx:
    """The world's records as the airline templates see them, read through `World.query` only."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.users: dict[str, User] = {u.user_id: u for u in cast("list[User]", world.query("users"))}
        self.reservations: dict[str, Reservation] = {
            r.reservation_id: r for r in cast("list[Reservation]", world.query("reservations"))
        }
        self.flights: dict[str, Flight] = {f.flight_number: f for f in cast("list[Flight]", world.query("flights"))}
        self.uids = sorted(self.users)

    # ---- the generic grounding (pipeline.authoring.kit.Grounding) ----------------------------------------------
    @property
    def customers(self) -> list[str]:
        return self.uids

    def customer(self, user_id: str) -> User:
        return self.users[user_id]

    def identifiable_without_email(self, customer: User) -> bool:
        return True  # an airline customer is identified by user id; the email is never asked for

    # ---- airline look-ups -------------------------------------------------------------------------------------

    def status(self, flight_number: str, day: str) -> str | None:
        fd = self.flights[flight_number].dates.get(day) if flight_number in self.flights else None
        return fd.status if fd is not None else None

    def flown(self, res: Reservation) -> bool:
        return any(self.status(f.flight_number, f.date) in FLOWN for f in res.flights)

    def airline_cancelled(self, res: Reservation) -> bool:
        return any(self.status(f.flight_number, f.date) == "cancelled" for f in res.flights)

    @staticmethod
    def recent(res: Reservation) -> bool:
        return NOW - datetime.fromisoformat(res.created_at) <= timedelta(hours=24)

    def active(self, user: User, exclude: set[str]) -> list[Reservation]:
        """The customer's reservations that are not cancelled and not yet flown, in id order."""
        out = [self.reservations[r] for r in sorted(user.reservations) if r in self.reservations and r not in exclude]
        return [r for r in out if r.status != "cancelled" and not self.flown(r)]

    def allowance(self, user: User, cabin: str, passengers: int) -> int:
        return FREE_BAGS[user.membership][cabin] * passengers

    @staticmethod
    def payer(user: User, amount: float, rng: random.Random) -> str | None:
        """A credit card, or a gift card whose balance covers `amount`; None when the profile has neither."""
        pms = user.payment_methods
        fits = [
            k
            for k in sorted(pms)
            if pms[k].source == "credit_card" or (pms[k].source == "gift_card" and (pms[k].amount or 0) >= amount)
        ]
        return rng.choice(fits) if fits else None

    def bookable(self, day_from: str, cabin: str, seats: int) -> list[tuple[str, str]]:
        """(flight number, date) of every flight date that is available with `seats` free in `cabin`."""
        out = []
        for number in sorted(self.flights):
            for day, fd in sorted(self.flights[number].dates.items()):
                if (
                    day >= day_from
                    and fd.status == "available"
                    and cast("dict[str, int]", fd.available_seats)[cabin] >= seats
                ):
                    out.append((number, day))
        return out
