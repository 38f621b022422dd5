"""Scripted participants for any domain, from a task's gold alone: an oracle that follows it, and the oracle with
the failure modes planted.

The oracle asks for what the identity tool takes and calls it once the customer said it; per request it asks
which record is meant when the customer did not say, reads what the gold reads, says what it will do and asks,
writes, and reports what the tool returned; a request the tools refuse it refuses with the tool's reason (which
a generic task's goal records). The flawed agent plants, on a request with a gold write: plan adherence (the
write skipped after the customer's yes, then reported done; or made without asking), invention (one argument
replaced by a value of the same shape that nobody said or showed), misread (on a request the tools refuse, the write
made anyway against the state a read showed, and reported done; on a conditional request, the branch the read
state does not select, written and reported done), inaction (on a request with a gold write, nothing done:
`pipeline.agents.scripted.inaction`).
"""

from __future__ import annotations

import json
import random
import re
import typing
from collections import abc
from typing import Any

from pipeline.agents import (
    INACTION,
    MODES,
    YES,
    FlawConfig,
    PlantingAgent,
    ScriptedEpisode,
    Steps,
    inaction_variants,
    not_acting,
    unit,
)
from pipeline.agents.scripted import phrases as P
from pipeline.dataset import UNTAKEN, Action, Request, Task, branches, condition
from pipeline.explore.kit import refusal_of, words
from pipeline.explore.questions import asked_field
from pipeline.explore.speech import phrase, speak
from pipeline.explore.values import base_type, vary
from pipeline.rollout import EpisodeInfo
from pipeline.world import ToolRegistry

ASK_RECORD = "Which one is this about? Please tell me its id."
SEQUENCES = (list, tuple, set, frozenset, abc.Sequence, abc.Set)
"""What a list-taking argument's annotation may say (`list[str]`, `Sequence[str]`, ...)."""


def _said(value: Any, text: str) -> bool:
    return all(str(v).lower() in text.lower() for v in (value if isinstance(value, list) else [value]))


def done_text(tool: str) -> str:
    return f"I've completed the request: {words(tool)} went through."


def confirm_text(write: Action) -> str:
    """The write in words and an explicit yes/no question (the policy's confirmation step)."""
    what = f"{words(write.name)} with {describe(write.arguments)}"
    return f"To confirm, I will make this change: {what}. Shall I proceed {P.YES_NO}?"


def describe(arguments: dict[str, Any]) -> str:
    """The arguments in words, lists as their items ('bill ids BL1 and BL2'), as the customer would say them."""
    return ", ".join(phrase(k, v) for k, v in arguments.items())


def asked_write(req: Request, tools: ToolRegistry, user_id: str | None) -> Action | None:
    """The write a request asks for, rebuilt from what the customer said: the intent names the tool, the details
    its arguments, the record id (or, for the customer's own record, their user id) the remaining one."""
    if req.intent not in tools:
        return None
    args: dict[str, Any] = {}
    for name, f in tools[req.intent].args_model.model_fields.items():
        many = typing.get_origin(base_type(f.annotation)) in SEQUENCES
        if name in req.details and base_type(f.annotation) is str:
            args[name] = req.details[name]
        elif name in req.details:
            try:
                args[name] = json.loads(req.details[name])
            except json.JSONDecodeError:
                args[name] = req.details[name]
            if many and not isinstance(args[name], list):  # a list said as its items: kept a list
                args[name] = items(args[name]) if isinstance(args[name], str) else [args[name]]
        else:
            key = req.record_id or user_id
            args[name] = [key] if many else key  # a list of keys: the one record the request is about
    return Action(name=req.intent, arguments=args)


def items(said: str) -> list[str]:
    """A list as the customer says it ('BL1, BL2 and BL3', or one id) back as its items."""
    return [p for p in re.split(r",\s*|\s+and\s+", said.strip()) if p]


class GenericEpisode(ScriptedEpisode):
    def __init__(self, info: EpisodeInfo, tools: ToolRegistry, flaws: dict[int, tuple[str, str]] | None = None):
        super().__init__(info)
        self.tools, self.writes, self.flaws = tools, tools.of_kind("write"), flaws or {}
        self.reasons = refusal_of(self.script.goal)

    def _user_text(self) -> str:
        return "\n".join(m.content or "" for m in self.messages if m.role == "user")

    def _authenticate(self) -> Steps:
        auth = self.task.gold_actions[0] if self.task.gold_actions else None
        if auth is None or auth.request is not None:
            return
        asked = ", ".join(words(a) for a in auth.arguments)
        reply = yield from self._say(
            f"I'd be happy to help. First I need to verify your identity: what is your {asked}?"
        )
        for _ in range(3):
            if all(_said(v, reply) for v in auth.arguments.values()):
                result = yield from self._call(auth.name, dict(auth.arguments))
                if not result.error:
                    return
            reply = yield from self._say(P.NOT_FOUND_IDENTITY)

    def _answer(self, req: Request, asked: tuple[str, str]) -> str:
        """A question's answer, from the record as a read showed it."""
        shown = next((_value(v, asked[1]) for (_, key), v in self.seen.items() if key == req.record_id), None)
        if shown is None:
            for m in reversed(self.messages):
                if m.role == "tool" and not m.error and req.record_id and req.record_id in (m.content or ""):
                    try:
                        shown = _value(json.loads(m.content or ""), asked[1])
                    except json.JSONDecodeError:
                        continue
                    if shown is not None:
                        break
        if shown is None:
            return f"I'm sorry, I could not find that. {P.ANYTHING_ELSE}"
        return f"I've looked it up: the {words(asked[1])} of {req.record_id} is {speak(shown)}. {P.ANYTHING_ELSE}"

    def _handle(self, i: int, req: Request) -> Steps:
        mode, variant = self.flaws.get(i, (None, None))
        if mode == INACTION and variant is not None:
            return (yield from not_acting(self, variant, next(iter(self.tools.of_kind("transfer")), None)))
        actions = self._actions(i)
        write = next((a for a in actions if a.name in self.writes), None)
        if req.record_id and not _said(req.record_id, self._user_text()):
            yield from self._say(ASK_RECORD)
        for read in (a for a in actions if a.name not in self.writes):
            yield from self._call(read.name, dict(read.arguments))
        asked = asked_field(req)
        if write is None and asked is not None:
            return (yield from self._finish(self._answer(req, asked)))
        if write is None and mode == "misread":  # the write the shown state forbids, reported as done
            forbidden = asked_write(req, self.tools, self.user_id or self.task.customer_user_id)
            if forbidden is not None:
                yield from self._call(forbidden.name, forbidden.arguments)
                done = f"{done_text(forbidden.name)} {P.ANYTHING_ELSE}"
                return (yield from self._finish(done))
        if write is None:
            refused = sum(r.expect == "refused" for r in self.script.requests[:i])
            reason = self.reasons[refused] if refused < len(self.reasons) else P.NO_POLICY_REASON
            return (yield from self._finish(P.refusal(f"{reason}."), f"{reason}."))
        if variant == "wrong_branch":  # the other outcome's write, after the read showed which one holds
            write = untaken(req, write, self.tools) or write
        args = dict(write.arguments)
        if mode == "invention":
            args = invent(args, self.task, i)
        if variant != "skip_confirmation":
            reply = yield from self._say(confirm_text(write))  # fmt: skip
            if not YES.search(reply):
                return (yield from self._finish(P.declined()))
        if variant == "no_write":
            return (yield from self._finish(f"{done_text(write.name)} {P.ANYTHING_ELSE}"))
        result = yield from self._call(write.name, args)
        if result.error and mode is None:
            return (yield from self._finish(P.failed(result.content or "")))
        shown = (result.content or "")[:300]
        yield from self._finish(f"{done_text(write.name)} The system returned: {shown} "
                                f"{P.ANYTHING_ELSE}")  # fmt: skip


def _value(found: Any, field: str) -> Any:
    return found.get(field) if isinstance(found, dict) else None


def invent(args: dict[str, Any], task: Task, i: int) -> dict[str, Any]:
    """One argument replaced by a value of the same shape nobody said: a stated detail first, else the record."""
    req = task.user_script.requests[i]
    scalar = [a for a in args if isinstance(args[a], (str, int, float)) and not isinstance(args[a], bool)]
    said = [a for a in scalar if a in req.details]
    names = sorted(said or scalar, key=lambda a: not isinstance(args[a], str))  # a text value first
    listed = [a for a in args if isinstance(args[a], list) and args[a] and isinstance(args[a][0], str)]
    if not names and not listed:
        return args
    name = names[0] if names else listed[0]  # else the first item of a list of ids
    rng = random.Random(f"invent:{task.id}:{i}")
    old = args[name] if names else args[name][0]
    new: Any = old
    for _ in range(20):
        new = vary(old, rng) if isinstance(old, str) else old + rng.randrange(3, 40)
        if new != old and str(new) not in json.dumps(task.model_dump()):
            break
    return {**args, name: new if names else [new, *args[name][1:]]}


class GenericOracle:
    name = "generic-oracle"

    def __init__(self, tools: ToolRegistry) -> None:
        self.tools = tools

    def start(self, info: EpisodeInfo) -> GenericEpisode:
        return GenericEpisode(info, self.tools)


def plan(config: FlawConfig, task: Task, trial: int, writes: frozenset[str]) -> dict[int, tuple[str, str]]:
    """Request index → (mode, variant): at most one mode per request; plan adherence, invention and inaction on
    requests with a gold write, misread on requests the tools refuse (the write asked for is made anyway)."""
    written = sorted({a.request for a in task.gold_actions if a.name in writes and a.request is not None})
    requests = task.user_script.requests
    refused = [i for i, r in enumerate(requests) if r.expect == "refused" and r.intent in writes]
    branched = [i for i in written if condition(requests[i]) is not None]
    out: dict[int, tuple[str, str]] = {}
    for mode in MODES:
        if unit(config.seed, task.id, trial, mode) >= config.rate(mode):
            continue
        fits = [i for i in (sorted(refused + branched) if mode == "misread" else written) if i not in out]
        if not fits:
            continue
        i = fits[int(unit(config.seed, task.id, trial, mode, "where") * len(fits))]
        if mode == "misread":
            out[i] = (mode, "wrong_branch" if i in branched else "write_refused")
            continue
        if mode == INACTION:
            options = inaction_variants(i, len(requests))
            out[i] = (mode, options[int(unit(config.seed, task.id, trial, mode, "how") * len(options))])
            continue
        variants = {"plan_adherence": ("no_write", "skip_confirmation"), "invention": ("fabricate",)}[mode]
        out[i] = (mode, variants[int(unit(config.seed, task.id, trial, mode, "how") * len(variants))])
    return out


def untaken(req: Request, write: Action, tools: ToolRegistry) -> Action | None:
    """The conditional request's other branch as the customer stated it, on the same record."""
    pair = branches(req.intent)
    if pair is None or write.name not in pair:
        return None
    other = pair[1] if write.name == pair[0] else pair[0]
    details = {k.removeprefix(UNTAKEN): v for k, v in req.details.items() if k.startswith(UNTAKEN)}
    return asked_write(req.model_copy(update={"intent": other, "details": details}), tools, req.record_id)


class GenericFlawed(PlantingAgent):
    def __init__(self, tools: ToolRegistry, config: FlawConfig | None = None) -> None:
        self.tools, self.writes = tools, tools.of_kind("write")
        self.oracle = lambda: GenericOracle(tools)
        super().__init__(config)
        self.name = "generic-" + self.name

    def plan_flaws(self, config: FlawConfig, task: Any, trial: int) -> dict[int, tuple[str, str]]:  # type: ignore[override]
        return plan(config, task, trial, self.writes)

    def episode(self, info: EpisodeInfo, flaws: dict, seed: int) -> GenericEpisode:
        return GenericEpisode(info, self.tools, flaws)
