"""Fresh seeded airline worlds (`gen-<seed>`), so that synthesized training data never comes from τ²-bench's
airline database, which is kept for evaluation.

A world has the τ²-bench airline schema and calendar (flights over May 2024, "now" being 2024-05-15 15:00, see
`tools.NOW`): each flight date before today has landed or was cancelled, today's are landed, flying, on time or
delayed by the hour, later ones are bookable with seats and prices per cabin. Users have τ²-style ids, payment
methods (credit cards, gift cards, certificates), saved passengers and a membership; reservations are one-way or
round trips on real flights of the world, paid with one of the owner's methods, booked before their first flight
(some within the last 24 hours). Same seed and sizes, same world.
"""

from __future__ import annotations

import random
import string
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from pipeline.domains.airline.grounding import FREE_BAGS
from pipeline.domains.airline.tools import BAG_FEE, INSURANCE_PER_PASSENGER, NOW
from pipeline.domains.retail.catalog import CARD_BRANDS, CITIES, FIRST_NAMES, LAST_NAMES, STREETS
from pipeline.world import World

if TYPE_CHECKING:
    from pipeline.domains.airline.domain import AirlineDomain

AIRPORTS = ("ATL", "BOS", "CLT", "DEN", "DFW", "DTW", "EWR", "IAH", "JFK", "LAS", "LAX", "LGA", "MCO", "MIA", "MSP",
            "ORD", "PHL", "PHX", "SEA", "SFO")  # fmt: skip
FIRST_DAY, LAST_DAY = date(2024, 5, 1), date(2024, 5, 30)
PRICES = {"basic_economy": (50, 100), "economy": (100, 200), "business": (200, 500)}
CANCELLED_SHARE = 0.08  # flight dates before today the airline cancelled
SIZES = ("n_flights", "n_users", "n_reservations")


class AirlineGeneratorConfig(BaseModel, extra="forbid"):
    """How big a world to generate and from which seed (τ²-bench airline's sizes by default)."""

    seed: int = Field(default=0, description="Seed of the world's random stream; same seed, same world.")
    n_flights: int = Field(default=300, ge=2, description="Number of flights (each flies every day of the month).")
    n_users: int = Field(default=500, ge=1, description="Number of users.")
    n_reservations: int = Field(default=2000, ge=0, description="Number of reservations, spread over the users.")
    name: str | None = Field(default=None, description="World name; default 'gen-<seed>'.")


def world_name(seed: int, n_flights: int = 300, n_users: int = 500, n_reservations: int = 2000) -> str:
    if (n_flights, n_users, n_reservations) == (300, 500, 2000):
        return f"gen-{seed}"
    return f"gen-{seed}-{n_flights}x{n_users}x{n_reservations}"


def _clock(minutes: int) -> str:
    return f"{minutes // 60 % 24:02d}:{minutes % 60:02d}:00" + ("+1" if minutes >= 24 * 60 else "")


def _stamp(day: date, minutes: int) -> str:
    return (datetime.combine(day, datetime.min.time()) + timedelta(minutes=minutes)).isoformat()


def _flight_date(rng: random.Random, day: date, dep: int, arr: int) -> dict:
    """One date's record: the status a flight leaving at `dep` and landing at `arr` (minutes) has on `day`."""
    now = (NOW - datetime.combine(NOW.date(), datetime.min.time())).seconds // 60
    late = rng.randint(-30, 30)
    if day < NOW.date() or (day == NOW.date() and arr + late < now):
        if day < NOW.date() and rng.random() < CANCELLED_SHARE:
            return {"status": "cancelled"}
        return {"status": "landed", "actual_departure_time_est": _stamp(day, dep + late),
                "actual_arrival_time_est": _stamp(day, arr + late + rng.randint(-20, 20))}  # fmt: skip
    if day == NOW.date():
        if dep + late < now:
            return {"status": "flying", "actual_departure_time_est": _stamp(day, dep + late),
                    "estimated_arrival_time_est": _stamp(day, arr + late)}  # fmt: skip
        delay = rng.choice((0, 0, 0, rng.randint(60, 180)))
        return {"status": "delayed" if delay else "on time", "estimated_departure_time_est": _stamp(day, dep + delay),
                "estimated_arrival_time_est": _stamp(day, arr + delay)}  # fmt: skip
    return {
        "status": "available",
        "available_seats": {c: rng.randint(0, 20) for c in PRICES},
        "prices": {c: rng.randint(lo, hi) for c, (lo, hi) in PRICES.items()},
    }


def _flights(rng: random.Random, n: int) -> dict[str, dict]:
    out = {}
    days = [FIRST_DAY + timedelta(days=k) for k in range((LAST_DAY - FIRST_DAY).days + 1)]
    for i in range(n):
        origin, destination = rng.sample(AIRPORTS, 2)
        dep = rng.randrange(0, 24) * 60
        arr = dep + rng.randint(2, 10) * 30
        number = f"HAT{i + 1:03d}"
        out[number] = {
            "flight_number": number,
            "origin": origin,
            "destination": destination,
            "scheduled_departure_time_est": _clock(dep),
            "scheduled_arrival_time_est": _clock(arr),
            "dates": {d.isoformat(): _flight_date(rng, d, dep, arr) for d in days},
        }
    return out


def _person(rng: random.Random, born: tuple[int, int] = (1950, 2005)) -> dict:
    dob = date(rng.randint(*born), 1, 1) + timedelta(days=rng.randrange(365))
    return {"first_name": rng.choice(FIRST_NAMES), "last_name": rng.choice(LAST_NAMES), "dob": dob.isoformat()}


def _payment_methods(rng: random.Random, ids: set[str]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for source in rng.sample(("credit_card", "credit_card", "gift_card", "certificate"), rng.randint(1, 3)):
        pid = f"{source}_{rng.randint(1000000, 9999999)}"
        while pid in ids:
            pid = f"{source}_{rng.randint(1000000, 9999999)}"
        ids.add(pid)
        if source == "credit_card":
            out[pid] = {"source": source, "id": pid, "brand": rng.choice(CARD_BRANDS),
                        "last_four": f"{rng.randint(0, 9999):04d}"}  # fmt: skip
        else:
            amount = rng.randint(20, 300) if source == "gift_card" else rng.choice((100, 150, 250, 500))
            out[pid] = {"source": source, "id": pid, "amount": float(amount)}
    return out


def _users(rng: random.Random, n: int) -> dict[str, dict]:
    out: dict[str, dict] = {}
    pay_ids: set[str] = set()
    while len(out) < n:
        me = _person(rng)
        uid = f"{me['first_name'].lower()}_{me['last_name'].lower()}_{rng.randint(1000, 9999)}"
        if uid in out:
            continue
        city, state, zip3 = rng.choice(CITIES)
        out[uid] = {
            "user_id": uid,
            "name": {"first_name": me["first_name"], "last_name": me["last_name"]},
            "address": {
                "address1": f"{rng.randint(1, 999)} {rng.choice(STREETS)}",
                "address2": rng.choice(("", f"Suite {rng.randint(100, 999)}")),
                "city": city,
                "country": "USA",
                "state": state,
                "zip": f"{zip3}{rng.randint(0, 99):02d}",
            },  # fmt: skip
            "email": f"{me['first_name'].lower()}.{me['last_name'].lower()}{rng.randint(1000, 9999)}@example.com",
            "dob": me["dob"],
            "payment_methods": _payment_methods(rng, pay_ids),
            "saved_passengers": [_person(rng) for _ in range(rng.randint(1, 2))],
            "membership": rng.choice(("regular", "silver", "gold")),
            "reservations": [],
        }
    return out


def _reservation(rng: random.Random, rid: str, user: dict, flights: dict[str, dict], routes: dict) -> dict:
    out = flights[rng.choice(sorted(flights))]
    back = routes.get((out["destination"], out["origin"]), [])
    day = FIRST_DAY + timedelta(days=rng.randrange((LAST_DAY - FIRST_DAY).days - 3))
    legs = [(out, day)]
    if back and rng.random() < 0.5:
        legs.append((flights[rng.choice(back)], day + timedelta(days=rng.randint(1, 3))))
    cabin = rng.choice(tuple(PRICES))
    me = {"first_name": user["name"]["first_name"], "last_name": user["name"]["last_name"], "dob": user["dob"]}
    party = ([me] if rng.random() < 0.7 else []) + rng.sample(user["saved_passengers"], rng.randint(0, 1))
    party = party or [me]
    segments = []
    for f, d in legs:
        fd = f["dates"][d.isoformat()]
        price = fd["prices"][cabin] if fd["status"] == "available" else rng.randint(*PRICES[cabin])
        segments.append({"flight_number": f["flight_number"], "origin": f["origin"],
                         "destination": f["destination"], "date": d.isoformat(), "price": price})  # fmt: skip
    n, bags, insurance = len(party), rng.choice((0, 0, 1, 1, 2, 3)), rng.choice(("yes", "no"))
    nonfree = max(0, bags - FREE_BAGS[user["membership"]][cabin] * n)
    total = sum(s["price"] for s in segments) * n + BAG_FEE * nonfree
    total += INSURANCE_PER_PASSENGER * n if insurance == "yes" else 0
    payer = rng.choice(sorted(user["payment_methods"]))
    start = datetime.combine(day, datetime.min.time())
    booked = min(start, NOW) - timedelta(seconds=rng.randint(60, 14 * 24 * 3600))
    res = {
        "reservation_id": rid,
        "user_id": user["user_id"],
        "origin": out["origin"],
        "destination": out["destination"],
        "flight_type": "round_trip" if len(legs) == 2 else "one_way",
        "cabin": cabin,
        "flights": segments,
        "passengers": party,
        "payment_history": [{"payment_id": payer, "amount": total}],
        "created_at": booked.replace(microsecond=0).isoformat(),
        "total_baggages": bags,
        "nonfree_baggages": nonfree,
        "insurance": insurance,
    }
    if rng.random() < 0.04:
        res["status"] = "cancelled"
        res["payment_history"].append({"payment_id": payer, "amount": -total})
    return res


def generate_world(config: AirlineGeneratorConfig, policy: str, domain: AirlineDomain) -> World:
    """The world of `config` under `domain`: flights, then users, then reservations (each owned by one user)."""
    rng = random.Random(f"airline:{config.seed}")
    flights = _flights(rng, config.n_flights)
    routes: dict[tuple[str, str], list[str]] = {}
    for number, f in sorted(flights.items()):
        routes.setdefault((f["origin"], f["destination"]), []).append(number)
    users = _users(rng, config.n_users)
    uids = sorted(users)
    reservations: dict[str, dict] = {}
    alphabet = string.ascii_uppercase + string.digits
    while len(reservations) < config.n_reservations:
        rid = "".join(rng.choice(alphabet) for _ in range(6))
        if rid in reservations:
            continue
        user = users[rng.choice(uids)]
        reservations[rid] = _reservation(rng, rid, user, flights, routes)
        user["reservations"].append(rid)
    data = {"flights": flights, "users": users, "reservations": reservations}
    name = config.name or world_name(config.seed, config.n_flights, config.n_users, config.n_reservations)
    return domain.from_dict(data, policy, name, f"generator(seed={config.seed})")
