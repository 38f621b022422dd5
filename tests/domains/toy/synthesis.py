"""The studio's synthesis kit: four atomic templates (two writes, two refusals) over real bookings."""

from __future__ import annotations

import random

from pipeline.authoring.drafts import Draft, Want, act
from pipeline.authoring.kit import SynthesisKit
from pipeline.authoring.taxonomy import Taxonomy, TemplateSpec
from pipeline.dataset.task import KnownInfo, Request
from pipeline.world.tables import World
from tests.domains.toy.schema import Booking, Member

ALL = ("plan_adherence", "invention", "misread")


class Studio:
    """The world's members and bookings, read through `World.query` only."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.members: dict[str, Member] = {m.user_id: m for m in world.query("users")}
        self.bookings: dict[str, Booking] = {b.booking_id: b for b in world.query("bookings")}
        self.customers = sorted(self.members)

    def customer(self, user_id: str) -> Member:
        return self.members[user_id]

    def identifiable_without_email(self, customer: Member) -> bool:
        return False  # the studio identifies members by email only

    def of(self, member: Member, status: str, exclude: set[str]) -> list[Booking]:
        return [
            self.bookings[b] for b in sorted(member.bookings) if b not in exclude and self.bookings[b].status == status
        ]


def _cancel_draft(template: str, booking: Booking, reads, why: str = "") -> Draft:
    req = Request(
        intent="cancel",
        utterance=f"I'd like to cancel my booking {booking.booking_id}.",
        expect="refused" if why else "done",
    )
    write = act("cancel_booking", booking_id=booking.booking_id)
    goal = f"Cancel booking {booking.booking_id}"
    if why:
        return Draft(
            template, req, f"{goal}; {why}, so the agent must refuse.", reads, None, write, (booking.booking_id,), 1
        )
    return Draft(template, req, f"{goal}.", reads, write, None, (booking.booking_id,), 1)


def cancel(ctx: Studio, member: Member, rng: random.Random, exclude: set[str], want: Want = Want()) -> Draft | None:
    booked = ctx.of(member, "booked", exclude)
    if not booked:
        return None
    b = rng.choice(booked)
    return _cancel_draft("cancel", b, [act("get_booking_details", booking_id=b.booking_id)])


def cancel_attended(ctx, member, rng, exclude, want=Want()) -> Draft | None:
    attended = ctx.of(member, "attended", exclude)
    if not attended:
        return None
    b = rng.choice(attended)
    reads = [act("get_booking_details", booking_id=b.booking_id)]
    return _cancel_draft("cancel_attended", b, reads, "it was already attended")


def other_member(ctx, member, rng, exclude, want=Want()) -> Draft | None:
    others = [
        b
        for k, b in sorted(ctx.bookings.items())
        if b.user_id != member.user_id and b.status == "booked" and k not in exclude
    ]
    if not others:
        return None
    b = rng.choice(others)
    reads = [act("get_user_details", user_id=member.user_id)]
    return _cancel_draft("other_member", b, reads, "it is another member's booking")


def change_zip(ctx, member, rng, exclude, want=Want()) -> Draft | None:
    if "user" in exclude:
        return None
    new = next(z for z in (f"{rng.randrange(10000, 99999)}" for _ in range(10)) if z != member.zip)
    req = Request(
        intent="modify_user_address",
        utterance=f"I've moved; please change the zip code on my account to {new}.",
        details={"address": f"The new zip {new}."},
    )
    write = act("modify_user_zip", user_id=member.user_id, zip=new)
    return Draft("change_zip", req, f"Change your zip code to {new}.", [], write, None, ("user",), 0)


class StudioKit(SynthesisKit):
    taxonomy = Taxonomy(
        (
            TemplateSpec("cancel", "cancel_booking", "done", ALL, omissible=False),
            TemplateSpec("change_zip", "modify_user_zip", "done", ("plan_adherence", "invention"), record=False),
            TemplateSpec("cancel_attended", "cancel_booking", "refused", ("misread",), "wrong_status", omissible=False),
            TemplateSpec(
                "other_member",
                "cancel_booking",
                "refused",
                ("plan_adherence", "misread"),
                "another_customer",
                omissible=False,
            ),
        )
    )
    templates = {
        "cancel": cancel,
        "change_zip": change_zip,
        "cancel_attended": cancel_attended,
        "other_member": other_member,
    }
    notes = {
        "forgot_email": "You do not remember your email address.",
        "vague_item": "",
        "also_request": "You bring up your last request only after the others are done.",
        "pushback": "When the agent refuses, you push back once.",
        "underspecified": "",
    }
    business = "a fitness studio"

    def ground(self, world: World) -> Studio:
        return Studio(world)

    def known(self, customer: Member) -> KnownInfo:
        return KnownInfo(
            email=customer.email, first_name=customer.first_name, last_name=customer.last_name, zip=customer.zip
        )


KIT = StudioKit()
