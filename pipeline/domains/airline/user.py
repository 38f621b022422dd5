"""How the scripted customer speaks airline: identifies with a user id, names reservations, answers the
airline oracle's questions (bags, insurance, payment method, reason). The conversation rules are the generic
scripted user's (`pipeline.users.scripted`)."""

from __future__ import annotations

import re

from pipeline.users.phrasing import Phrasing

USER_ID = "My user id is {x}."


def _identity(episode, t: str):
    if "user id" not in t:
        return None
    known = episode.script.known.user_id
    return episode._reply(USER_ID.format(x=known)) if known else episode._reply("I'm sorry, I don't know my user id.")


PHRASING = Phrasing(
    topics={
        "reason": re.compile(r"\breason\b|\bwhy\b"),
        "bags": re.compile(r"\bbags?\b|baggage"),
        "insurance": re.compile(r"insurance"),
        "payment_method": re.compile(r"payment|\bcard\b|\bpay\b"),
        "reservation_id": re.compile(r"reservation (id|number)|which reservation"),
    },
    record_topic="reservation_id",
    record_answer="It's reservation {x}.",
    identity=_identity,
)
