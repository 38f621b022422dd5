"""The studio domain behind the boundary, named `tests.domains.toy.domain:TOY`: seeded generated worlds only."""

from __future__ import annotations

import random
import re
from pathlib import Path

from pydantic import BaseModel

from pipeline.world.domain import Domain
from pipeline.world.tables import World
from tests.domains.toy.schema import TABLES, Booking, Member, StudioClass
from tests.domains.toy.tools import TOOLS

_GEN = re.compile(r"^gen-(\d+)$")
FIRST = ("Ann", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea")
LAST = ("Moss", "Nash", "Ortiz", "Park", "Quinn", "Reyes", "Shah", "Tran")
CLASSES = ("yoga", "spin", "pilates", "boxing")


def generate(seed: int, members: int = 24, name: str | None = None) -> World:
    rng = random.Random(f"studio:{seed}")
    users, bookings = {}, {}
    classes = {c: StudioClass(class_id=c, name=c.capitalize(), open_spots=rng.randrange(0, 6)) for c in CLASSES}
    for i in range(members):
        uid = f"m{i:03d}"
        first, last = FIRST[i % len(FIRST)], LAST[(i * 5 + seed) % len(LAST)]
        mine = []
        for _ in range(rng.randrange(1, 4)):
            bid = f"BK{len(bookings):04d}"
            status = rng.choices(("booked", "attended", "cancelled"), weights=(5, 4, 1))[0]
            bookings[bid] = Booking(booking_id=bid, user_id=uid, class_id=rng.choice(CLASSES), status=status)
            mine.append(bid)
        users[uid] = Member(
            user_id=uid,
            first_name=first,
            last_name=last,
            email=f"{first}.{last}.{i}@studio.example".lower(),
            zip=f"{rng.randrange(10000, 99999)}",
            bookings=mine,
        )
    tables = {"users": users, "classes": classes, "bookings": bookings}
    return World(tables, policy=TOY.policy(), name=name or f"gen-{seed}", domain=TOY)


class StudioDomain(Domain):
    name = "studio"
    tables = TABLES
    tools = TOOLS

    def load(self, ref: str) -> World | None:
        m = _GEN.match(ref)
        return generate(int(m.group(1)), name=ref) if m else None

    def policy(self) -> str:
        return Path(__file__).with_name("policy.md").read_text(encoding="utf-8")

    def owner(self, table: str, record: BaseModel) -> str | None:
        return getattr(record, "user_id", None) if table in ("users", "bookings") else None

    def invariants(self):
        from tests.domains.toy.invariants import INVARIANTS

        return INVARIANTS

    def identity_fields(self) -> tuple[str, ...]:
        return ("email",)

    def generator(self):
        return lambda seed, sizes, name=None: generate(seed, sizes.get("members", 24), name)

    def tasks(self):
        from pipeline.authoring.templates import generate_tasks

        return generate_tasks

    def synthesis(self):
        from tests.domains.toy.synthesis import KIT

        return KIT

    def oracle(self):
        from tests.domains.toy.agents import StudioOracle

        return StudioOracle

    def flaws(self):
        from tests.domains.toy.agents import StudioFlawed

        return StudioFlawed


TOY = StudioDomain()
