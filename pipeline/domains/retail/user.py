"""How the scripted customer speaks retail: identifies with their email, or with name and zip when they forgot it;
names orders; answers the retail oracle's questions (reason, items, payment method, address, order id). The
conversation rules are the generic scripted user's (`pipeline.users.scripted`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pipeline.users import FORGOT
from pipeline.users.phrasing import Phrasing

if TYPE_CHECKING:
    from pipeline.dataset import Request
    from pipeline.rollout import UserReply
    from pipeline.users import ScriptedUserEpisode

NAME_ZIP = "My name is {first} {last} and my zip code is {zip}."
EMAIL = "My email is {email}."
TOPICS = {
    "reason": re.compile(r"\breason|\bwhy\b"),
    "items": re.compile(r"which items?|which products?|\boptions?\b|\bitems?\b.*\?"),
    "payment_method": re.compile(r"payment|\bcard\b|\brefund|\bpay\b"),
    "address": re.compile(r"address"),
    "order_id": re.compile(r"order (id|number)"),
}
REFUSAL = re.compile(r"\bonly (pending|delivered) orders\b")
"""Retail's own way of saying no, besides the generic refusal words (an order past the status a write needs)."""
_ZIP = re.compile(r"zip (\d{5})")


def _names_request(request: Request, text: str) -> bool:
    """A confirmation of a request about no order (a new default address) names its new zip code."""
    zip_ = _ZIP.search(request.details.get("address", ""))
    return zip_ is None or zip_.group(1) in text


def _identity(episode: ScriptedUserEpisode, t: str) -> UserReply | None:
    """Asked for the email, the customer gives it, or says they forgot it and then gives name and zip; asked for
    name and zip, they give those."""
    script = episode.script
    known = script.known
    name_zip = NAME_ZIP.format(first=known.first_name, last=known.last_name, zip=known.zip)
    wants_name = "name" in t and "zip" in t
    if "email" in t and not (script.messes.forgot_email and wants_name):
        if not script.messes.forgot_email and known.email:
            return episode._reply(EMAIL.format(email=known.email))
        if not episode.said_forgot:
            episode.said_forgot = True
            return episode._reply(FORGOT)
        return episode._reply(f"I really don't remember it. {name_zip}")
    if wants_name:
        prefix = f"{FORGOT} " if script.messes.forgot_email and not episode.said_forgot else ""
        episode.said_forgot = True
        return episode._reply(prefix + name_zip)
    return None


PHRASING = Phrasing(
    topics=TOPICS,
    record_topic="order_id",
    record_answer="It's order {x}.",
    identity=_identity,
    refusal=REFUSAL,
    names_request=_names_request,
)
