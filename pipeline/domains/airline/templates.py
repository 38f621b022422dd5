"""The airline templates: every airline write and the refusals the policy requires and the tools enforce.

A template looks at one customer and, if it applies, drafts what the customer says, the reads an agent needs to
ground every value it will write (a figure the policy derives — a total, a bag count, a certificate amount — is
computed with `calculate`, so it comes from a tool), and the write itself, or for a refusal the write the
customer asks for and the tools refuse. It returns None when the customer has nothing it fits.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import cast

from pipeline.authoring import Want, act
from pipeline.dataset import Request
from pipeline.domains.airline.grounding import (
    CANCELLED_FLIGHT_CERTIFICATE,
    COVERED_REASON,
    PLAIN_REASON,
    Ctx,
    Draft,
    describe_payment,
    draft,
)
from pipeline.domains.airline.schema import Cabin, Money, User
from pipeline.domains.airline.tools import BAG_FEE, INSURANCE_PER_PASSENGER

# (ctx, customer, rng, reservation ids already used, what a harder variant wants) → a draft, or None if nothing fits
Template = Callable[..., Draft | None]
_ANY = Want()
FIRST_BOOKABLE_DAY = "2024-05-16"


def _pay_said(user: User, method: str) -> str:
    return f"Please use my {describe_payment(user.payment_methods[method], user.payment_methods)}."


def _refund_to(user: User, res, amount, rng: random.Random) -> str | None:
    """A method of the profile that paid at least `amount` of this reservation: a refund never exceeds what a
    method paid (the refund ceiling invariant)."""
    net: dict[str, float] = {}
    for p in res.payment_history:
        net[p.payment_id] = net.get(p.payment_id, 0) + p.amount
    pms = user.payment_methods
    fits = [k for k, v in sorted(net.items()) if v >= amount and k in pms and pms[k].source != "certificate"]
    return rng.choice(fits) if fits else None


def _statuses(res) -> list:
    return [act("get_flight_status", flight_number=f.flight_number, date=f.date) for f in res.flights]


def book(ctx: Ctx, user: User, rng: random.Random, exclude: set[str], want: Want = _ANY) -> Draft | None:
    if "user" in exclude:
        return None
    cabin = rng.choice(("basic_economy", "economy", "business"))
    party = [user.name.model_dump() | {"dob": user.dob}]
    if user.saved_passengers and rng.random() < 0.4:
        party.append(rng.choice(user.saved_passengers).model_dump())
    n = len(party)
    options = ctx.bookable(FIRST_BOOKABLE_DAY, cabin, n)
    if not options:
        return None
    number, day = rng.choice(options)
    out = ctx.flights[number]
    legs = [(number, day)]
    back = [(f, d) for f, d in options if d > day and ctx.flights[f].origin == out.destination]
    back = [(f, d) for f, d in back if ctx.flights[f].destination == out.origin]
    if back and rng.random() < 0.4:
        legs.append(rng.choice(back))
    prices = [cast("dict[str, Money]", ctx.flights[f].dates[d].prices)[cabin] for f, d in legs]
    bags = rng.choice((0, 1, 2, 3))
    free = min(bags, ctx.allowance(user, cabin, n))
    insurance = rng.choice(("yes", "no"))
    total = sum(prices) * n + (INSURANCE_PER_PASSENGER * n if insurance == "yes" else 0) + BAG_FEE * (bags - free)
    method = ctx.payer(user, total, rng)
    if method is None:
        return None
    kind = "round_trip" if len(legs) == 2 else "one_way"
    trip = "round trip" if kind == "round_trip" else "one-way trip"
    when = f"on {day}" + (f", returning on {legs[1][1]}" if kind == "round_trip" else "")
    who = "for myself" if n == 1 else f"for myself and {party[1]['first_name']} {party[1]['last_name']}"
    expr = f"{' + '.join(map(str, prices))}" + (f" * {n}" if n > 1 else "")
    expr = f"({expr})" if len(prices) > 1 and n > 1 else expr
    expr += f" + {INSURANCE_PER_PASSENGER} * {n}" if insurance == "yes" else ""
    expr += f" + {BAG_FEE} * {bags - free}" if bags > free else ""
    req = Request(
        intent="book",
        utterance=f"I'd like to book a {trip} from {out.origin} to {out.destination} {when}, flight {number}"
        + (f" out and flight {legs[1][0]} back" if kind == "round_trip" else "")
        + f", in {cabin.replace('_', ' ')}, {who}.",
        details={
            "bags": f"{bags} checked bag{'' if bags == 1 else 's'} in total.",
            "insurance": "I would like travel insurance." if insurance == "yes" else "No insurance, thanks.",
            "payment_method": _pay_said(user, method),
        },
    )
    reads = [act("search_direct_flight", origin=ctx.flights[f].origin, destination=ctx.flights[f].destination, date=d)
             for f, d in legs]  # fmt: skip
    reads += [act("calculate", expression=f"{bags} - {free}"), act("calculate", expression=expr)]
    write = act(
        "book_reservation",
        user_id=user.user_id,
        origin=out.origin,
        destination=out.destination,
        flight_type=kind,
        cabin=cabin,
        flights=[{"flight_number": f, "date": d} for f, d in legs],
        passengers=party,
        payment_methods=[{"payment_id": method, "amount": total}],
        total_baggages=bags,
        nonfree_baggages=bags - free,
        insurance=insurance,
    )
    return draft("book", req, f"Book a {trip} {out.origin}-{out.destination} {when} {who}", reads, write)


def cancel(
    ctx: Ctx, user: User, rng: random.Random, exclude: set[str], want: Want = _ANY, *, allowed: bool = True
) -> Draft | None:
    def fits(r) -> bool:
        ok = ctx.recent(r) or ctx.airline_cancelled(r) or r.cabin == "business" or r.insurance == "yes"
        return ok if allowed else not ok

    options = [r for r in ctx.active(user, exclude) if fits(r)]
    if not options:
        return None
    res = rng.choice(options)
    only_insured = not (ctx.recent(res) or ctx.airline_cancelled(res) or res.cabin == "business")
    reason = COVERED_REASON if allowed and only_insured else PLAIN_REASON
    rid = res.reservation_id
    req = Request(
        intent="cancel",
        utterance=f"I'd like to cancel my reservation {rid}.",
        record_id=rid,
        details={"reason": reason},
        expect="done" if allowed else "refused",
    )
    reads = [act("get_reservation_details", reservation_id=rid), *_statuses(res)]
    template = "cancel" if allowed else "cancel_not_allowed"
    why = (
        f"it is {res.cabin.replace('_', ' ')} without insurance, booked over 24 hours ago, and no flight was cancelled"
    )
    write = act("cancel_reservation", reservation_id=rid)
    return draft(template, req, f"Cancel reservation {rid} ({reason})", reads, write, why)


def cancel_not_allowed(ctx, user, rng, exclude, want=_ANY):
    return cancel(ctx, user, rng, exclude, allowed=False)


def change_flight(
    ctx: Ctx, user: User, rng: random.Random, exclude: set[str], want: Want = _ANY, *, basic: bool = False
):
    fits = []
    for res in ctx.active(user, exclude):
        if (res.cabin == "basic_economy") != basic:
            continue
        n = len(res.passengers)
        for j, seg in enumerate(res.flights):
            lo = res.flights[j - 1].date if j > 0 else FIRST_BOOKABLE_DAY
            hi = res.flights[j + 1].date if j + 1 < len(res.flights) else "9999"
            for day, fd in sorted(ctx.flights[seg.flight_number].dates.items()):
                if (
                    lo <= day <= hi
                    and day != seg.date
                    and fd.status == "available"
                    and cast("dict[Cabin, int]", fd.available_seats)[res.cabin] >= n
                ):
                    fits.append((res, j, day))  # fmt: skip
    if not fits:
        return None
    res, j, day = rng.choice(fits)
    seg, n, rid = res.flights[j], len(res.passengers), res.reservation_id
    new_price = cast("dict[Cabin, Money]", ctx.flights[seg.flight_number].dates[day].prices)[res.cabin]
    diff = (new_price - seg.price) * n
    method = ctx.payer(user, max(diff, 0), rng) if diff >= 0 else _refund_to(user, res, -diff, rng)
    if method is None:
        return None
    flights = [{"flight_number": f.flight_number, "date": day if k == j else f.date} for k, f in enumerate(res.flights)]
    req = Request(
        intent="update_flights",
        utterance=f"I'd like to move flight {seg.flight_number} on {seg.date} of my reservation {rid} to the same"
        f" flight on {day}.",
        record_id=rid,
        details={"payment_method": _pay_said(user, method)},
        expect="refused" if basic else "done",
    )
    reads = [
        act("get_reservation_details", reservation_id=rid),
        act("search_direct_flight", origin=seg.origin, destination=seg.destination, date=day),
    ]
    if not basic:
        reads.append(act("calculate", expression=f"({new_price} - {seg.price}) * {n}"))
    write = act("update_reservation_flights", reservation_id=rid, cabin=res.cabin, flights=flights, payment_id=method)
    template = "basic_economy_change" if basic else "update_flights"
    goal = f"Move flight {seg.flight_number} of reservation {rid} from {seg.date} to {day}"
    return draft(template, req, goal, reads, write, "the flights of a basic economy reservation cannot be changed")


def basic_economy_change(ctx, user, rng, exclude, want=_ANY):
    return change_flight(ctx, user, rng, exclude, basic=True)


def add_bags(ctx: Ctx, user: User, rng: random.Random, exclude: set[str], want: Want = _ANY) -> Draft | None:
    options = ctx.active(user, exclude)
    if not options:
        return None
    res = rng.choice(options)
    rid, n, k = res.reservation_id, len(res.passengers), rng.choice((1, 2))
    total = res.total_baggages + k
    over = total - ctx.allowance(user, res.cabin, n)
    nonfree = max(res.nonfree_baggages, over)
    fee = BAG_FEE * (nonfree - res.nonfree_baggages)
    method = ctx.payer(user, fee, rng)
    if method is None:
        return None
    reads = [
        act("get_reservation_details", reservation_id=rid),
        act("calculate", expression=f"{res.total_baggages} + {k}"),
    ]
    if over > res.nonfree_baggages:
        reads.append(act("calculate", expression=f"{total} - {ctx.allowance(user, res.cabin, n)}"))
    if fee:
        reads.append(act("calculate", expression=f"{BAG_FEE} * {nonfree - res.nonfree_baggages}"))
    bags = f"{k} checked bag{'s' if k > 1 else ''}"
    req = Request(
        intent="update_baggages",
        utterance=f"I'd like to add {bags} to my reservation {rid}.",
        record_id=rid,
        details={"payment_method": _pay_said(user, method)},
    )
    write = act(
        "update_reservation_baggages",
        reservation_id=rid,
        total_baggages=total,
        nonfree_baggages=nonfree,
        payment_id=method,
    )
    return draft("update_baggages", req, f"Add {bags} to reservation {rid}", reads, write)


def remove_bag(ctx: Ctx, user: User, rng: random.Random, exclude: set[str], want: Want = _ANY) -> Draft | None:
    options = [r for r in ctx.active(user, exclude) if r.total_baggages >= 1]
    if not options:
        return None
    res = rng.choice(options)
    rid, total = res.reservation_id, res.total_baggages - 1
    req = Request(
        intent="update_baggages",
        utterance=f"I'd like to remove a checked bag from my reservation {rid}.",
        record_id=rid,
        expect="refused",
    )
    method = sorted(user.payment_methods)[0]
    write = act(
        "update_reservation_baggages",
        reservation_id=rid,
        total_baggages=total,
        nonfree_baggages=min(total, res.nonfree_baggages),
        payment_id=method,
    )
    reads = [act("get_reservation_details", reservation_id=rid)]
    return draft("remove_bag", req, f"Remove a bag from reservation {rid}", reads, write, "bags cannot be removed")


def passengers(
    ctx: Ctx, user: User, rng: random.Random, exclude: set[str], want: Want = _ANY, *, add: bool = False
) -> Draft | None:
    options = ctx.active(user, exclude)
    if not options:
        return None
    res = rng.choice(options)
    rid = res.reservation_id
    donor = ctx.users[rng.choice(ctx.uids)]
    new = {"first_name": donor.name.first_name, "last_name": donor.name.last_name, "dob": donor.dob}
    old = [p.model_dump() for p in res.passengers]
    if new in old:
        return None
    said = f"{new['first_name']} {new['last_name']}, born {new['dob']}"
    if add:
        utterance, party = f"I'd like to add a passenger to my reservation {rid}: {said}.", [*old, new]
    else:
        j = rng.randrange(len(old))
        gone = f"{old[j]['first_name']} {old[j]['last_name']}"
        utterance = f"On my reservation {rid}, please replace the passenger {gone} with {said}."
        party = [new if k == j else p for k, p in enumerate(old)]
    req = Request(intent="update_passengers", utterance=utterance, record_id=rid, expect="refused" if add else "done")
    write = act("update_reservation_passengers", reservation_id=rid, passengers=party)
    template = "add_passenger" if add else "update_passengers"
    reads = [act("get_reservation_details", reservation_id=rid)]
    why = "the number of passengers of a reservation cannot change"
    goal = f"{'Add' if add else 'Put'} {said} on reservation {rid}" + ("" if add else f" instead of {gone}")
    return draft(template, req, goal, reads, write, why)


def add_passenger(ctx, user, rng, exclude, want=_ANY):
    return passengers(ctx, user, rng, exclude, add=True)


def certificate(ctx: Ctx, user: User, rng: random.Random, exclude: set[str], want: Want = _ANY) -> Draft | None:
    if "user" in exclude:
        return None
    options = []
    for rid in sorted(user.reservations):
        res = ctx.reservations.get(rid)
        if res is None or res.status == "cancelled" or rid in exclude:
            continue
        eligible = user.membership != "regular" or res.insurance == "yes" or res.cabin == "business"
        hit = [f for f in res.flights if ctx.status(f.flight_number, f.date) == "cancelled"]
        if eligible and hit:
            options.append((res, hit[0]))
    if not options:
        return None
    res, seg = rng.choice(options)
    n, rid = len(res.passengers), res.reservation_id
    req = Request(
        intent="send_certificate",
        utterance=f"My flight {seg.flight_number} on {seg.date} of reservation {rid} was cancelled, and I'm really"
        " upset about it. I'd like some compensation.",
        record_id=rid,
    )
    reads = [
        act("get_reservation_details", reservation_id=rid),
        act("get_flight_status", flight_number=seg.flight_number, date=seg.date),
        act("calculate", expression=f"{CANCELLED_FLIGHT_CERTIFICATE} * {n}"),
    ]
    write = act("send_certificate", user_id=user.user_id, amount=CANCELLED_FLIGHT_CERTIFICATE * n)
    return draft("send_certificate", req, f"Get compensated for cancelled flight {seg.flight_number}", reads, write)


TEMPLATES: dict[str, Template] = {
    "book": book,
    "cancel": cancel,
    "update_flights": change_flight,
    "update_baggages": add_bags,
    "update_passengers": passengers,
    "send_certificate": certificate,
    "cancel_not_allowed": cancel_not_allowed,
    "basic_economy_change": basic_economy_change,
    "remove_bag": remove_bag,
    "add_passenger": add_passenger,
}
