"""The synthesis kit any domain gets from its world model: templates grown by execution, not written by hand.

Per write tool three atomic templates: `<tool>` (the write done, on one of the customer's own records that the
tool accepts), `<tool>__refused` (the write asked for on the customer's own record, in a state the tool refuses
— a precondition on the record, or on an argument against it) and `<tool>__other_customer` (the write asked for
on another customer's record). A template searches by execution: it forms the customer's argument sets from
their records (`pipeline.explore.probe.Explorer.arguments`), runs each in a fresh session, and keeps the first
whose outcome is the one it wants, so every value in a draft is the world's and every outcome the tool's. The
customer states every argument in plain words; the gold reads are the look-ups the world model found for the
customer and the record. A template that fits no customer of a world is skipped, and its cell stays uncovered.
Questions and requests no tool serves are `pipeline.explore.questions`'.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pipeline.authoring import Draft, Taxonomy, TemplateSpec, Want, act, authenticate
from pipeline.dataset import KnownInfo, Request
from pipeline.explore.learn import pattern_regex
from pipeline.explore.probe import Explorer, world_model
from pipeline.explore.repair import attempt
from pipeline.explore.speech import phrase, series, words
from pipeline.grading.modes import FAILURE_MODES
from pipeline.world import ToolRegistry, World, execute

ALL = FAILURE_MODES
REFUSED, OTHER, QUESTION, UNSERVABLE = "__refused", "__other_customer", "ask__", "unservable__"
QUESTION_INTENT, UNSERVABLE_INTENT = "question:", "unservable:"
CONDITIONAL = "if__"
"""A question's intent: 'question:<table>.<field>' (the record is the request's record id)."""
REFUSE_NOTE = "The agent must refuse: "
TRIES = 8
SKIPPED = ("invalid_arguments", "not_found", "unauthorized", "internal")
"""Refusal categories a `__refused` template does not ask for: a malformed call, a record that does not exist
(a made-up id), another customer's record (`__other_customer`), a bug in a tool."""
_REFUSE = re.compile(re.escape(REFUSE_NOTE) + r"“(.*?)”")


_SIBILANT = ("ss", "x", "ch", "sh", "zz")
"""Endings that take -es in the plural ('addresses', 'boxes', 'branches', 'dishes', 'buzzes'; 'sizes' is 'size')."""
_UNCHANGED = ("ss", "us", "is")
"""Endings of a word that is already one ('address', 'status', 'analysis')."""


def singular(table: str) -> str:
    """One record of a table, by the regular rules: 'policies' → 'policy', 'addresses' → 'address', 'branches' →
    'branch', 'statuses' → 'status', 'bills' → 'bill'; a word already singular, or not a regular plural
    ('people'), stays as it is."""
    if table.endswith(_UNCHANGED) or not table.endswith("s") or table.endswith(("series", "species")):
        return table
    if table.endswith("ies") and len(table) > 4 and table[-4] not in "aeiou":
        return table[:-3] + "y"
    if table.endswith(tuple(f"{e}es" for e in _SIBILANT)) or (table.endswith("uses") and table[-5:-4] != "o"):
        return table[:-2]  # 'statuses', 'bonuses' too ('warehouses' is 'warehouse')
    return table[:-1]


def say(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def action(tool: str, table: str | None, key: str | None, whose: str | None) -> str:
    """The write in words about one record: 'dispute my bill BL0032' (the tool's name already ends with the
    record's kind: 'pay bills' → 'pay my bill BL0032'), 'place hold for my member M001', or 'pay bills' about no
    record."""
    done = words(tool)
    if table is None or key is None:
        return done
    thing = singular(words(table))
    mine = f"{whose} " if whose else ""
    for named in (thing, plural(thing)):  # 'dispute bill', 'pay bills' about one bill
        if done.endswith(f" {named}"):
            return f"{done.removesuffix(named)}{mine}{thing} {key}"
    return f"{done} for {mine}{thing} {key}"


def unspecified(utterance: str, record_id: str) -> str | None:
    """The utterance without the record's id: 'my bill BL0032' → 'one of my bills'; None when it does not name it
    as one of the customer's own (another customer's record is never left unsaid)."""
    found = re.search(rf"\bmy ((?:\w+ ){{1,3}}){re.escape(record_id)}\b", utterance)
    if not found:
        return None
    thing = found.group(1).strip()
    return utterance[: found.start()] + f"one of my {plural(thing)}" + utterance[found.end() :]


def plural(thing: str) -> str:
    """The inverse of `singular`: 'policy' → 'policies', 'address' → 'addresses', 'bill' → 'bills'."""
    if thing.endswith(_SIBILANT) or (thing.endswith("us") and len(thing) > 2):
        return f"{thing}es"
    if thing.endswith("s"):
        return thing
    if thing.endswith("y") and len(thing) > 1 and thing[-2] not in "aeiou":
        return thing[:-1] + "ies"
    return f"{thing}s"


def refuse_note(reason: str | None) -> str:
    return f"{REFUSE_NOTE}“{reason}”."


def refusal_of(goal: str) -> list[str]:
    """The tools' reasons a generic task's goal records for its refused requests, in request order."""
    return [m.group(1) for m in _REFUSE.finditer(goal)]


def taxonomy_of(tools: ToolRegistry) -> Taxonomy:
    single = [r for r in sorted(tools.of_kind("read")) if len(tools[r].args_model.model_fields) == 1]
    specs = [TemplateSpec(QUESTION + r, r, "done", ("misread",), question=True) for r in single]
    specs += [
        TemplateSpec(UNSERVABLE + r, r, "refused", ("plan_adherence",), "no tool serves it", question=True)
        for r in single
    ]
    writes = sorted(tools.of_kind("write"))
    for w in writes:
        specs.append(TemplateSpec(w, w, "done", ALL))
        specs.append(TemplateSpec(w + REFUSED, w, "refused", ("misread",), "the tool's precondition"))
        specs.append(TemplateSpec(w + OTHER, w, "refused", ("plan_adherence", "misread"), "another customer's",
                                  omissible=False))  # fmt: skip
    for w in writes:  # a conditional request needs a sibling write about a record named the same way
        first = next(iter(tools[w].args_model.model_fields), None)
        if first and any(o != w and next(iter(tools[o].args_model.model_fields), None) == first for o in writes):
            specs.append(TemplateSpec(CONDITIONAL + w, w, "done", ALL))
    return Taxonomy(specs)


class Grounding:
    """One world's customers, their records and the explorer that forms and runs their calls."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.model = world_model(world)
        self.ex = Explorer(world, seed=0)
        self.customers = list(self.ex.customers)
        self.asked: Counter[tuple[str, str]] = Counter()  # (tool, refusal group) → drafts asking for it
        self.branches: Counter[tuple[str, str, bool]] = Counter()  # (tool, sibling, condition holds) → drafts
        self.missed: Counter[tuple[str, str, bool]] = Counter()  # the same → customers on whom drafting failed
        self.states: dict[tuple[str, str], dict[str, set]] = {}  # (table, field) → customer → its values

    def customer(self, user_id: str) -> Customer:
        return Customer(user_id, known_of(self, user_id))

    def identifiable_without_email(self, customer: Customer) -> bool:
        """Whether forgetting their email matters and leaves another way: the customer would give an email, and
        an identity tool takes what else they know."""
        tools = self.world.domain.tools
        try:
            usual = authenticate(tools, customer.known, without_email=False)
            authenticate(tools, customer.known, without_email=True)
        except ValueError:
            return False
        return "email" in usual.arguments


@dataclass(frozen=True)
class Customer:
    user_id: str
    known: KnownInfo


def known_of(ctx: Grounding, user: str) -> KnownInfo:
    """What the customer can say about themselves (`pipeline.explore.identity`)."""
    from pipeline.explore.identity import known

    return known(ctx.ex, user)


class Template:
    def __init__(self, tool: str, want: str) -> None:
        self.tool, self.want = tool, want  # want: done | refused | other

    def __call__(
        self, ctx: Grounding, customer: Customer, rng: random.Random, exclude: set[str], want: Want
    ) -> Draft | None:
        return self.search(ctx, customer.user_id, rng, exclude, self._target(ctx, rng))

    def search(
        self,
        ctx: Grounding,
        user: str,
        rng: random.Random,
        exclude: set[str],
        target: re.Pattern[str] | None,
        fallback_ok: bool = True,
    ) -> Draft | None:
        """The first call of the customer's whose outcome is wanted and, for a refusal, matches `target` (if any);
        else, when `fallback_ok`, the refusal of the group asked for least so far."""
        ex, tool = ctx.ex, self.tool
        subject, table = ex.subject(tool)
        if self.want == "other" and table is None:
            return None
        fallback = None
        for key in self._keys(ctx, user, table, rng, exclude):
            for _ in range(TRIES):
                calls = attempt(ex, tool, user, key, rng)
                if calls is None:
                    break
                for call in calls:
                    args = call.arguments
                    if not self._fits(call):
                        continue
                    if call.ok and breaks_invariants(ctx.world, tool, user, args):
                        continue  # the tool allows it, the domain's end-state rules do not: never a gold write
                    if target is None or target.match(call.error or ""):
                        return self._draft(ctx, user, subject, table, key, args, call.error)
                    if not fallback_ok:
                        continue
                    if fallback is None or self._asked(ctx, call.error) < self._asked(ctx, fallback[2]):
                        fallback = (key, args, call.error)  # the group asked for least so far, if none aimed at
        return self._draft(ctx, user, subject, table, *fallback) if fallback else None

    def draft_of(self, ctx: Grounding, user: str, args: dict, error: str | None) -> Draft:
        """The draft of a call already made (and checked) as `user`."""
        subject, table = ctx.ex.subject(self.tool)
        key = args.get(subject) if subject else None
        key = key[0] if isinstance(key, list) and key else key  # a write about several records: the one it names
        return self._draft(ctx, user, subject, table, key, args, error)

    def _asked(self, ctx: Grounding, error: str | None) -> int:
        group = next((n for n, rx in self._groups(ctx) if rx.match(error or "")), None)
        return ctx.asked[(self.tool, group)] if group is not None else 0

    def _groups(self, ctx: Grounding) -> list[tuple[str, re.Pattern[str]]]:
        return [(g.name, pattern_regex(g.pattern)) for g in ctx.model.writes[self.tool].refusals
                if g.category not in SKIPPED]  # fmt: skip

    def _target(self, ctx: Grounding, rng: random.Random) -> re.Pattern[str] | None:
        """A refusal aims at the tool's refusal group asked for least so far in this grounding (the rng breaks
        ties), so every group gets asked for."""
        if self.want != "refused":
            return None
        groups = self._groups(ctx)
        if not groups:
            return None
        least = min(ctx.asked[(self.tool, name)] for name, _ in groups)
        return rng.choice([rx for name, rx in groups if ctx.asked[(self.tool, name)] == least])

    def _keys(self, ctx: Grounding, user: str, table: str | None, rng: random.Random, exclude: set[str]) -> list:
        ex = ctx.ex
        if table is None:
            return [None] if tool_key(self.tool) not in exclude else []
        if self.want == "other":  # another customer of the grounding's own (a partition's: its side's)
            mates = list(ctx.customers)
            others = [k for u in rng.sample(mates, min(6, len(mates))) if u != user
                      for k in sorted(ex.owned.get(u, {}).get(table, []))]  # fmt: skip
            return rng.sample(others, min(3, len(others)))
        if table == ex.customer_table:
            return [user] if f"{user}:{self.tool}" not in exclude else []
        own = [k for k in sorted(ex.owned.get(user, {}).get(table, [])) if k not in exclude]
        return rng.sample(own, len(own))

    def _fits(self, call) -> bool:
        if self.want == "done":
            return call.ok and bool(call.changes)
        if self.want == "other":
            return not call.ok and call.category == "unauthorized"
        return not call.ok and call.category not in SKIPPED

    def _draft(self, ctx, user, subject, table, key, args, error) -> Draft:
        ex, tool = ctx.ex, self.tool
        own_record = table == ex.customer_table and key == user
        about = None if own_record or table is None else key
        said = [phrase(a, v) for a, v in args.items() if a != subject and v is not None]
        mine = self.want != "other"
        utterance = f"I'd like you to {action(tool, table if about else None, key, 'my' if mine else None)}"
        utterance += " on my account" if own_record else ""
        utterance += f", with {series(said)}." if said else "."
        details = {a: say(v) for a, v in args.items() if a != subject and v is not None}
        request = Request(intent=tool, utterance=utterance, record_id=about, details=details,
                          expect="done" if self.want == "done" else "refused")  # fmt: skip
        reads = self._reads(ctx, user, table, key)
        goal = action(tool, table if about else None, key, "your" if mine else None)
        goal = goal[:1].upper() + goal[1:]
        goal += (" on your account" if own_record else "") + (f" ({'; '.join(said)})" if said else "") + "."
        name = tool + {"done": "", "refused": REFUSED, "other": OTHER}[self.want]
        record = key if about else f"{user}:{tool}" if own_record else tool_key(tool)
        if self.want == "done":
            return Draft(name, request, goal, reads, act(tool, **args), None, (record,), 1)
        group = next((n for n, rx in self._groups(ctx) if rx.match(error or "")), None)
        if group is not None and self.want == "refused":
            ctx.asked[(tool, group)] += 1
        return Draft(name, request, f"{goal} {refuse_note(error)}", reads, None, act(tool, **args), (record,), 1)

    def _reads(self, ctx: Grounding, user: str, table: str | None, key: str | None) -> list:
        return gold_reads(ctx, user, table, key if self.want != "other" else None)  # another's: its read is refused


def gold_reads(ctx: Grounding, user: str, table: str | None, key: str | None) -> list:
    """The look-ups of the customer's record and of the record a request is about (the read tools that read them)."""
    ex, reads = ctx.ex, []
    for wanted, value in ((ex.customer_table, user), (table, key)):
        if wanted is None or value is None or wanted == ex.customer_table and value != user:
            continue
        tool = next((n for n, t in ctx.model.tools.items() if t.kind == "read" and t.reads == wanted), None)
        if tool is not None:
            action = act(tool, **{next(iter(ctx.model.tools[tool].args)): value})
            if action not in reads:
                reads.append(action)
    return reads


def breaks_invariants(world: World, tool: str, user: str, args: dict) -> bool:
    """Whether the call, made as the customer in a fresh session, leaves a state the domain's invariants reject."""
    from pipeline.grading import StaticInput

    session = world.session(authenticated_user_id=user)
    execute(session, tool, args)
    inp = StaticInput(world, [e.to_dict() for e in session.log], session.changed())
    return any(not inv.check(inp).passed for inv in world.domain.invariants())


def tool_key(tool: str) -> str:
    return f"tool:{tool}"
