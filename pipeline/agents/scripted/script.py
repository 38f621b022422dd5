"""What every domain's scripted agent is built on: an episode that is a generator of assistant messages.

A scripted agent (a domain's oracle, its flawed variants) authenticates the customer, then handles each request
of the task's user script; how it does either is the domain's (`_authenticate`, `_handle`). This module holds
the primitives they are written with — one tool call, one message to the customer, closing a request — and the
value-evidence helpers. It knows no domain.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Generator
from contextlib import suppress
from typing import Any

from pipeline.agents.scripted import phrases as P
from pipeline.dataset import Action, Task
from pipeline.rollout import EpisodeInfo, Message, ToolCall

log = logging.getLogger(__name__)
Steps = Generator[Message, None, Any]

YES = re.compile(r"^\W*(yes|yeah|yep|sure|ok|okay)\b|\b(confirm|go ahead|proceed)\b", re.IGNORECASE)
PUSHBACK = re.compile(r"are you sure|exception|really need|please just|come on", re.IGNORECASE)


def appears_in(value: Any, texts: list[str]) -> bool:
    """Value evidence: a write argument (or each list element) occurs verbatim in one of `texts`."""
    if isinstance(value, list):
        return all(appears_in(v, texts) for v in value)
    s = str(value)
    return s == "" or any(s in t for t in texts)


def evidence(messages: list[Message]) -> list[str]:
    """What an agent may take values from: user messages and tool results."""
    return [m.content for m in messages if m.role in ("user", "tool") and m.content]


class ScriptedEpisode:
    """One conversation of a scripted agent. Subclasses write `_authenticate` and `_handle` as generators with
    the primitives below; `act` hands out the messages they yield, one per agent turn."""

    def __init__(self, info: EpisodeInfo) -> None:
        self.task: Task = info.task
        self.script = info.task.user_script
        self.messages: list[Message] = []
        self.seen: dict[tuple[str, str], Any] = {}  # (read tool, first argument) → parsed result
        self.user_id: str | None = None
        self._fact: str | None = None  # said at the start of the next message (see `_say`)
        self._calls = 0
        self._steps = self._run()

    def act(self, messages: list[Message]) -> Message:
        self.messages = messages
        try:
            return next(self._steps)
        except StopIteration:
            return Message(role="assistant", content=P.GOODBYE)

    # ---- what a domain writes ------------------------------------------------------------------------------
    def _authenticate(self) -> Steps:
        raise NotImplementedError

    def _handle(self, i: int, req: Any) -> Steps:
        raise NotImplementedError

    def _observe(self, name: str, arguments: dict[str, Any], result: Message) -> None:
        """A tool's answer, as the episode takes note of it (a domain may remember refusals); nothing by default."""

    # ---- primitives -----------------------------------------------------------------------------------------
    def _call(self, name: str, arguments: dict[str, Any]) -> Steps:
        """One tool call; returns the tool message that answered it. A read's parsed result is kept in `seen`."""
        self._calls += 1
        self._fact = None  # a fact belongs to the message that acts on it, never to a later one
        call = ToolCall(id=f"call_{self._calls}", name=name, arguments=arguments, raw_arguments=json.dumps(arguments))
        yield Message(role="assistant", tool_calls=[call])
        result = self.messages[-1]
        self._observe(name, arguments, result)
        if not result.error and name.startswith("get_"):
            key = next(iter(arguments.values()), "")
            with suppress(json.JSONDecodeError):
                self.seen[(name, key)] = json.loads(result.content or "")
        return result

    def _say(self, text: str) -> Steps:
        """One message to the user (after the pending fact, if any); returns their reply."""
        if self._fact:
            text, self._fact = f"{self._fact} {text}", None
        yield Message(role="assistant", content=text)
        return self.messages[-1].content or ""

    def _finish(self, text: str, refusal: str | None = None) -> Steps:
        """Close a request ('anything else?'), restating a refusal once if the user pushes back."""
        reply = yield from self._say(text)
        if refusal and PUSHBACK.search(reply):
            yield from self._say(P.refusal_again(refusal))

    def _conclude(self, i: int, req: Any, write: Action | None, details: str, confirmed: bool) -> Steps:
        """The end of every request once its reads are done: refuse with the policy's reason (`_check_details`),
        or confirm the write (`_confirm`, unless already confirmed) and carry it out (`_perform`)."""
        reason = self._check_details(req, details)
        if reason is None and write is None:
            log.warning("task %s request %d: no write and no policy reason to refuse", self.task.id, i)
            reason = P.NO_POLICY_REASON
        if reason:
            return (yield from self._finish(P.refusal(reason), reason))
        assert write is not None  # a request without a write was refused above
        if not confirmed:
            ok = yield from self._confirm(i, req, write)
            if not ok:
                return (yield from self._finish(P.declined()))
        yield from self._perform(i, req, write)

    def _check_details(self, req: Any, details: str) -> str | None:
        raise NotImplementedError

    def _confirm(self, i: int, req: Any, write: Action) -> Steps:
        raise NotImplementedError

    def _perform(self, i: int, req: Any, write: Action) -> Steps:
        raise NotImplementedError

    def _last_user(self) -> str:
        return next((m.content or "" for m in reversed(self.messages) if m.role == "user"), "")

    def _actions(self, i: int) -> list[Action]:
        return [a for a in self.task.gold_actions if a.request == i]

    # ---- the conversation -------------------------------------------------------------------------------------
    def _run(self) -> Steps:
        yield from self._authenticate()
        for i, req in enumerate(self.script.requests):
            yield from self._handle(i, req)
