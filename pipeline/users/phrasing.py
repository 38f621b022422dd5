"""A domain's side of the scripted customer (`Domain.user_phrasing`): which questions ask for which detail, how
the customer names the record a request is about, and how they identify themselves."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.rollout.protocols import EpisodeInfo, UserReply
    from pipeline.users.scripted import ScriptedUserEpisode

FORGOT = "I'm sorry, I don't remember my email address."
TOPICS = {
    "reason": re.compile(r"\breason|\bwhy\b"),
    "items": re.compile(r"which items?|which products?|\boptions?\b|\bitems?\b.*\?"),
    "payment_method": re.compile(r"payment|\bcard\b|\brefund|\bpay\b"),
    "address": re.compile(r"address"),
    "order_id": re.compile(r"order (id|number)"),
}


@dataclass(frozen=True)
class Phrasing:
    """A domain's side of the scripted customer (`Domain.user_phrasing`): which questions ask for which detail,
    how the customer names the record a request is about, and how they identify themselves. The defaults are
    the retail customer's (email, or name and zip; orders)."""

    topics: Mapping[str, re.Pattern[str]] = field(default_factory=lambda: dict(TOPICS))
    """Detail topic → the question that asks for it; the answer is the request's `details[topic]`."""
    record_topic: str = "order_id"
    """The topic that asks which record a request is about; answered with `record_answer`."""
    record_answer: str = "It's order {x}."
    identity: Callable[[ScriptedUserEpisode, str], UserReply | None] | None = None
    """(episode, the agent's message in lower case) → the reply to an identity question, or None when it asks
    none; None: the retail rules (email, or name and zip when the email is forgotten)."""
    episode: Callable[[EpisodeInfo], Any] | None = None
    """A customer who plays the whole episode their own way (one who holds tools of their own, dual control):
    `f(info)` → the user episode; None: the rules above."""
