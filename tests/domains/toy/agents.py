"""The studio's scripted agents: an oracle that follows the policy, and the oracle with planted flaws."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Generator
from typing import Any

from pipeline.dataset.task import Action, Request, Task
from pipeline.rollout.protocols import EpisodeInfo
from pipeline.rollout.trajectory import Message, ToolCall
from tests.domains.toy.tools import TOOLS

MODES = ("plan_adherence", "invention", "misread")
WRITES = TOOLS.of_kind("write")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")
ANYTHING_ELSE = "Is there anything else I can help you with?"
Steps = Generator[Message, None, Any]


class StudioOracle:
    name = "studio-oracle"

    def start(self, info: EpisodeInfo) -> StudioEpisode:
        return StudioEpisode(info.task, None)


class StudioFlawed:
    """The oracle with at most one failure mode planted per trial, chosen by a hash of (seed, task, trial, mode)."""

    def __init__(self, rates: dict[str, float], seed: int = 0) -> None:
        unknown = sorted(set(rates) - set(MODES))
        if unknown:
            raise ValueError(f"unknown failure mode(s) {unknown}; modes: {list(MODES)}")
        self.rates, self.seed = rates, seed
        self.name = "studio-flawed"

    def planted(self, task: Task, trial: int) -> str | None:
        if not any(a.name in WRITES for a in task.gold_actions):
            return None
        for mode in MODES:
            digest = hashlib.sha256(f"{self.seed}:{task.id}:{trial}:{mode}".encode()).digest()
            if int.from_bytes(digest[:8], "big") / 2**64 < self.rates.get(mode, 0.0):
                return mode
        return None

    def start(self, info: EpisodeInfo) -> StudioEpisode:
        return StudioEpisode(info.task, self.planted(info.task, info.trial))


class StudioEpisode:
    def __init__(self, task: Task, flaw: str | None) -> None:
        self.task, self.flaw = task, flaw
        self.messages: list[Message] = []
        self.calls = 0
        self.steps = self._run()

    def act(self, messages: list[Message]) -> Message:
        self.messages = messages
        try:
            return next(self.steps)
        except StopIteration:
            return Message(role="assistant", content="Goodbye!")

    def _call(self, name: str, arguments: dict) -> Steps:
        self.calls += 1
        call = ToolCall(id=f"call_{self.calls}", name=name, arguments=arguments, raw_arguments=json.dumps(arguments))
        yield Message(role="assistant", tool_calls=[call])
        return self.messages[-1]

    def _say(self, text: str) -> Steps:
        yield Message(role="assistant", content=text)
        return self.messages[-1].content or ""

    def _run(self) -> Steps:
        reply = yield from self._say("Welcome to the studio desk. Could you tell me the email on your account?")
        for _ in range(3):
            found = EMAIL.search(reply)
            if found and not (yield from self._call("find_user_id_by_email", {"email": found.group(0)})).error:
                break
            reply = yield from self._say("I could not find that. Which email address is on your account?")
        flawed = False
        for i, req in enumerate(self.task.user_script.requests):
            actions = [a for a in self.task.gold_actions if a.request == i]
            for read in (a for a in actions if a.name not in WRITES):
                yield from self._call(read.name, dict(read.arguments))
            write = next((a for a in actions if a.name in WRITES), None)
            flaw = None if flawed or write is None else self.flaw
            flawed = flawed or flaw is not None
            yield from self._handle(req, write, flaw)

    def _handle(self, req: Request, write: Action | None, flaw: str | None) -> Steps:
        if write is None or flaw == "misread":
            why = "it cannot be changed in its current status" if flaw else "the policy does not allow it"
            reply = yield from self._say(f"I'm sorry, but I cannot do that: {why}. {ANYTHING_ELSE}")
            if "are you sure" in reply.lower():
                yield from self._say(f"I understand, but I cannot make an exception. {ANYTHING_ELSE}")
            return
        args = dict(write.arguments)
        what = ", ".join(f"{k} {v}" for k, v in args.items())
        if flaw != "plan_adherence":
            yield from self._say(f"I can do {write.name.replace('_', ' ')} with {what}. Shall I go ahead (yes/no)?")
        if flaw == "invention":
            key = next(iter(k for k in args if k != "user_id"))
            args[key] = "00000" if key == "zip" else "BK9999"
        yield from self._call(write.name, args)
        yield from self._say(f"Done: {write.name.replace('_', ' ')} with {what} has been completed. {ANYTHING_ELSE}")
