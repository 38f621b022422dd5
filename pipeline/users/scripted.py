"""The scripted customer: plays a task's user script with a persona, the messes, and no model.

It understands the agent by keyword and intent rules (asks for identity, asks for a detail, asks for a
yes/no confirmation, reports done, refuses, transfers), loose enough for a model agent that phrases
things a little differently. The persona changes the wording, never the content; every choice is seeded
by the task id and trial, so the same episode replays identically.
"""

from __future__ import annotations

import hashlib
import random
import re

from pipeline.dataset import Request, Task
from pipeline.rollout import STOP_TOKEN, EpisodeInfo, Message, UserReply, persona_for
from pipeline.users.phrasing import Phrasing

# Persona wrappers; "{x}" is the persona-neutral content. Non-confirming replies avoid words a grader reads
# as a "yes" (yes, sure, okay, confirm, proceed, go ahead), so only the confirmation answer affirms.
OPEN = {
    "terse": ["{x}"],
    "chatty": [
        "Hi there! I hope your day is going well. {x} Thanks so much for your help!",
        "Hello! {x} I really appreciate you looking into this.",
    ],
    "formal": ["Good day. {x} Thank you in advance for your assistance.", "Hello. {x} I would appreciate your help."],
    "anxious": [
        "Hi, um, I hope you can help me. {x} I'm a little worried about this.",
        "Hello... {x} Sorry, I'm a bit nervous about getting this right.",
    ],
}
ANSWER = {
    "terse": ["{x}"],
    "chatty": ["Oh, of course! {x}", "Absolutely, happy to help. {x}"],
    "formal": ["Certainly. {x}", "Of course. {x}"],
    "anxious": ["Oh, um, let me think... {x}", "Right. {x} I hope that's what you need."],
}
YES = {
    "terse": ["Yes.", "Yes, go ahead."],
    "chatty": ["Yes, please go ahead! Thank you!", "Yes, that all looks right, go ahead."],
    "formal": ["Yes, I confirm. Please proceed.", "Yes, that is correct. Please proceed."],
    "anxious": ["Yes, that's right. Please go ahead.", "Yes... yes, that's correct. Please proceed."],
}
BYE = {
    "terse": ["That's all. Thanks."],
    "chatty": ["Nope, that's everything! Thank you so much, you've been wonderful."],
    "formal": ["That will be all. Thank you for your assistance."],
    "anxious": ["No, that's all... thank you, that's a relief."],
}
NEXT_STATED = "There's one more thing I mentioned. {x}"
NEXT_ALSO = "Oh, can you also help me with something else? {x}"
PUSHBACK = "Are you sure? I really need this done. Can't you make an exception just this once?"
CONFUSED = "Sorry, I'm not sure what you mean. {x}"
DECLINE = "No, that's not what I asked for. {x}"
GIVE_UP = "This isn't getting anywhere. I'll try again another time."

_CONFIRM = re.compile(r"\(yes/no\)|\b(confirm|proceed|go ahead|shall i|should i|would you like me to)\b")
_CLOSE = re.compile(r"anything else|something else i can|else i can help|help you with anything")
_REFUSE = re.compile(
    r"\b(cannot|can't|can not|unable|not able|not possible|not allowed|not eligible|unfortunately|i'm sorry, but)\b"
)
_DONE = re.compile(r"\b(has been|have been|is now|are now|successfully|done|completed|all set|i've|i have)\b")
_TRANSFER = re.compile(r"transferr?(ed|ing) to a human|human agent")


DEFAULT_PHRASING = Phrasing()


def phrasing_of(domain: str | None) -> Phrasing:
    """The phrasing a domain declares (`DEFAULT_PHRASING` for none, or when the domain is not known here)."""
    if domain is None:
        return DEFAULT_PHRASING
    from pipeline.world import resolve_domain

    found = resolve_domain(domain).capability("user_phrasing")
    return found if isinstance(found, Phrasing) else DEFAULT_PHRASING


class ScriptedUser:
    """Factory of scripted customers; `max_unproductive` bounds turns that move nothing forward. The phrasing is
    the episode's domain's (`Domain.user_phrasing`) unless one is given."""

    name = "scripted-user"

    def __init__(self, max_unproductive: int = 3, max_turns: int = 30, phrasing: Phrasing | None = None) -> None:
        self.max_unproductive = max_unproductive
        self.max_turns = max_turns
        self.phrasing = phrasing

    def start(self, info: EpisodeInfo) -> ScriptedUserEpisode:
        persona = info.persona or persona_for(info.task, info.trial)
        phrasing = self.phrasing or phrasing_of(info.domain)
        if phrasing.episode is not None:
            return phrasing.episode(info)
        return ScriptedUserEpisode(info.task, info.trial, persona, self.max_unproductive, self.max_turns, phrasing)


class ScriptedUserEpisode:
    def __init__(
        self,
        task: Task,
        trial: int,
        persona: str,
        max_unproductive: int,
        max_turns: int,
        phrasing: Phrasing = DEFAULT_PHRASING,
    ) -> None:
        self.phrasing = phrasing
        self.script = task.user_script
        self.requests: list[Request] = list(self.script.requests)
        self.persona = persona
        digest = hashlib.sha256(f"user:{task.id}:{trial}".encode()).digest()
        self.rng = random.Random(int.from_bytes(digest[:8], "big"))
        self.max_unproductive, self.max_turns = max_unproductive, max_turns
        self.current = 0
        also = self.script.messes.also_request and len(self.requests) > 1
        self.stated = len(self.requests) - 1 if also else len(self.requests)
        self.confirmed: set[int] = set()
        self.pushed: set[int] = set()
        self.said_forgot = False
        self.unproductive = 0
        self.turns = 0

    # ---- wording ----------------------------------------------------------------------------------------
    def _wrap(self, table: dict[str, list[str]], text: str = "") -> str:
        return self.rng.choice(table[self.persona]).format(x=text)

    def _utterance(self, req: Request) -> str:
        if self.script.messes.vague_item and req.vague_utterance:
            return req.vague_utterance
        return req.utterance

    def _reply(self, text: str, productive: bool = True) -> UserReply:
        self.unproductive = 0 if productive else self.unproductive + 1
        if self.unproductive >= self.max_unproductive or self.turns >= self.max_turns:
            return self._stop(GIVE_UP)
        return UserReply(content=text)

    def _stop(self, text: str) -> UserReply:
        return UserReply(content=f"{text} {STOP_TOKEN}", stop=True)

    # ---- the conversation ---------------------------------------------------------------------------------
    def respond(self, messages: list[Message]) -> UserReply:
        self.turns += 1
        said = [m.content for m in messages if m.role == "assistant" and not m.tool_calls and m.content]
        if not any(m.role == "user" for m in messages):
            if not self.requests:
                return self._stop(self._wrap(BYE))
            first = " Also: ".join(self._utterance(r) for r in self.requests[: self.stated])
            return UserReply(content=self._wrap(OPEN, first))
        return self._react(said[-1] if said else "")

    def _react(self, text: str) -> UserReply:
        t = text.lower()
        req = self.requests[self.current] if self.current < len(self.requests) else None
        if _TRANSFER.search(t):
            return self._stop("Okay, I'll wait for the human agent.")
        if _CONFIRM.search(t) and "?" in t and not _CLOSE.search(t):
            if req is not None and self._matches(req, text):
                self.confirmed.add(self.current)
                return self._reply(self._wrap(YES))
            return self._reply(DECLINE.format(x=self._utterance(req)) if req else "No, thank you.", productive=False)
        if _CLOSE.search(t):
            return self._close(t)
        identity = self._identity(t)
        if identity is not None:
            return identity
        ph = self.phrasing
        topics = [k for k, rx in ph.topics.items() if rx.search(t)] if "?" in t else []
        if topics and req is not None:
            answers = [req.about if k == ph.record_topic else self._detail(req, k) for k in topics]
            answers = [
                ph.record_answer.format(x=a) if k == ph.record_topic and a else a
                for k, a in zip(topics, answers, strict=True)
            ]
            known = [a for a in answers if a]
            if known:
                return self._reply(self._wrap(ANSWER, " ".join(known)))
        if _DONE.search(t) or self._refused(t):
            return self._close(t)
        return self._reply(CONFUSED.format(x=self._utterance(req)) if req else "Could you say that again?", False)

    def _detail(self, req: Request, topic: str) -> str | None:
        said, speak = req.details.get(topic), self.phrasing.speak
        return speak(said) if said is not None and speak is not None else said

    def _identity(self, t: str) -> UserReply | None:
        identity = self.phrasing.identity
        return identity(self, t) if identity is not None else None

    def _refused(self, t: str) -> bool:
        """The agent said no: in the generic words, or in the domain's own (`Phrasing.refusal`)."""
        own = self.phrasing.refusal
        return bool(_REFUSE.search(t)) or (own is not None and own.search(t) is not None)

    def _matches(self, req: Request, text: str) -> bool:
        """A confirmation is about the current request if it names its record (or, for a request about no record,
        what the domain's phrasing reads as naming it: `Phrasing.names_request`)."""
        if req.about:
            return req.about in text
        names = self.phrasing.names_request
        return names is None or names(req, text)

    def _close(self, t: str) -> UserReply:
        """The agent wrapped up the current request (done or refused) and asked if there is anything else."""
        i = self.current
        if i >= len(self.requests):
            return self._stop(self._wrap(BYE))
        refused = self._refused(t)
        if refused and self.script.messes.pushback and i not in self.pushed:
            self.pushed.add(i)
            return self._reply(PUSHBACK)
        if not refused and i not in self.confirmed and not _DONE.search(t):
            return self._reply(CONFUSED.format(x=self._utterance(self.requests[i])), productive=False)
        self.current += 1
        if self.current >= len(self.requests):
            return self._stop(self._wrap(BYE))
        nxt = self._utterance(self.requests[self.current])
        if self.current < self.stated:
            return self._reply(NEXT_STATED.format(x=nxt))
        self.stated = self.current + 1
        return self._reply(NEXT_ALSO.format(x=nxt))
