"""A domain's side of the scripted customer (`Domain.user_phrasing`): which questions ask for which detail, how
the customer names the record a request is about, and how they identify themselves."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.dataset import Request
    from pipeline.rollout import EpisodeInfo, UserReply
    from pipeline.users.scripted import ScriptedUserEpisode

FORGOT = "I'm sorry, I don't remember my email address."
"""What a customer without their email (the 'forgot_email' mess) says when asked for it."""


@dataclass(frozen=True)
class Phrasing:
    """A domain's side of the scripted customer (`Domain.user_phrasing`): which questions ask for which detail,
    how the customer names the record a request is about, and how they identify themselves. The defaults say
    nothing domain-specific: no detail topics, records named by their id, no identity answers."""

    topics: Mapping[str, re.Pattern[str]] = field(default_factory=dict)
    """Detail topic → the question that asks for it; the answer is the request's `details[topic]`."""
    record_topic: str = "record_id"
    """The topic that asks which record a request is about; answered with `record_answer`."""
    record_answer: str = "It's {x}."
    identity: Callable[[ScriptedUserEpisode, str], UserReply | None] | None = None
    """(episode, the agent's message in lower case) → the reply to an identity question, or None when it asks
    none; None: the customer answers no identity question."""
    refusal: re.Pattern[str] | None = None
    """The domain's own ways of saying no, matched in the agent's message (lower case) besides the generic refusal
    words (retail: 'only pending orders'); None: the generic words only."""
    names_request: Callable[[Request, str], bool] | None = None
    """(request, the agent's message in lower case) → whether a confirmation is about a request that is about no
    record (retail: it names the new zip code); None: any confirmation is."""
    speak: Callable[[str], str] | None = None
    """How the customer says a detail they answer with (generic: a JSON list as its items, 'BL1 and BL2'); None:
    as the request's `details` hold it."""
    episode: Callable[[EpisodeInfo], Any] | None = None
    """A customer who plays the whole episode their own way (one who holds tools of their own, dual control):
    `f(info)` → the user episode; None: the rules above."""
