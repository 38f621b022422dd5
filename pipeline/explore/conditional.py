"""Conditional requests, for any domain: "if its status is pending, cancel it; otherwise modify it".

A write tool and another write tool about a record of the same table make one template, `if__<tool>`: the
customer names one of their records and both branches. The condition is one the world model found: the values
of a record field the tool was seen to accept (where a precondition on the field explains its refusals), else a
value of an enumerated field of the table ('if its cabin is business'). Which branch is right
is decided by the record's state, which the agent must look up: the template reads the record through the
domain's read tool in a fresh session (what the agent will be shown), evaluates the condition on it, and forms
and runs the selected branch's call; a draft is kept only when that call succeeds and changes the world. The branch
not taken is stated too, never written, with arguments that carry it out on the same record with only the
condition's field changed to a value selecting it (run in that altered world, `World.altered`). Both branches are
live: a sibling is paired with a condition only when exploration saw the tool succeed on a record the condition
holds for and the sibling succeed on one it fails for (`WriteModel.ok_states`). Which pair and branch come next is
`pipeline.explore.balance`'s: a pair drafted with one branch is completed with the other, so both appear as gold.
"""

from __future__ import annotations

import json
import random
from typing import Any

from pipeline.authoring import Draft, Want, act
from pipeline.dataset import CONDITIONAL_INTENT, IF, UNTAKEN, Request
from pipeline.explore import balance
from pipeline.explore.kit import (
    CONDITIONAL,
    TRIES,
    Customer,
    Grounding,
    breaks_invariants,
    gold_reads,
    say,
    singular,
    words,
)
from pipeline.explore.pairs import Pair, live
from pipeline.explore.pairs import key as value_key
from pipeline.explore.repair import attempt, repairs
from pipeline.explore.speech import phrase, speak
from pipeline.world import CounterfactualError, execute


def shown(ctx: Grounding, user: str, table: str, key: str) -> dict[str, Any] | None:
    """The record as the domain's read tool shows it to the customer, in a fresh session (None: no such read)."""
    read = next((r for r in gold_reads(ctx, user, table, key) if ctx.model.tools[r.name].reads == table), None)
    if read is None:
        return None
    event = execute(ctx.world.session(authenticated_user_id=user), read.name, dict(read.arguments))
    if not event.ok:
        return None
    try:
        out = json.loads(event.content or "")
    except json.JSONDecodeError:
        return None
    return out if isinstance(out, dict) else None


class Conditional:
    """`if__<tool>`: do `tool` if the record's field has a value it accepts, otherwise a sibling write."""

    def __init__(self, tool: str) -> None:
        self.tool = tool

    def __call__(
        self, ctx: Grounding, customer: Customer, rng: random.Random, exclude: set[str], want: Want
    ) -> Draft | None:
        _, table = ctx.ex.subject(self.tool)
        pairs = live(ctx.model, self.tool)
        if not pairs or table is None or table == ctx.ex.customer_table:  # a branch turns on one of their records
            return None
        chosen = balance.choose(ctx, self.tool, pairs, rng)
        if chosen is None:
            return None
        pair, aim = chosen
        draft = self.draft(ctx, customer.user_id, rng, exclude, pair, aim)
        if draft is None:
            balance.missed(ctx, self.tool, pair, aim, customer.user_id)
        return draft

    def draft(
        self, ctx: Grounding, user: str, rng: random.Random, exclude: set[str], pair: Pair, aim: bool
    ) -> Draft | None:
        """The request on one of the customer's records whose state, as the read shows it, selects the branch
        `aim` (the condition holds, or not); None when they own no such record or no call carries it out."""
        if user not in balance.holders(ctx, self.tool, pair, aim):
            return None
        ex, (field, allowed, other) = ctx.ex, pair
        _, table = ex.subject(self.tool)
        if table is None:
            return None
        states = {h: [v for v in (allowed if h else ctx.model.writes[other].ok_states.get(field, []))
                      if value_key(v) in balance.selecting(ctx, self.tool, pair, h)]
                  for h in (True, False)}  # fmt: skip
        own = [k for k in sorted(ex.owned.get(user, {}).get(table, [])) if k not in exclude]
        for key in rng.sample(own, len(own)):
            record = shown(ctx, user, table, key)
            if record is None or value_key(record.get(field)) not in {value_key(v) for v in states[aim]}:
                continue
            taken, untaken = (self.tool, other) if aim else (other, self.tool)
            args = self._call(ctx, taken, user, key, rng)
            if args is None:
                continue
            alt = self._untaken(ctx, untaken, user, table, key, field, states[not aim], rng)
            if alt is None:
                continue
            ctx.branches[(self.tool, other, aim)] += 1
            return self._draft(ctx, user, table, key, (field, allowed), other, aim, args, alt)
        return None

    def _call(self, ctx: Grounding, tool: str, user: str, key: str, rng: random.Random) -> dict | None:
        """Arguments for `tool` on the record that succeed, change the world and keep its invariants."""
        for _ in range(TRIES):
            calls = attempt(ctx.ex, tool, user, key, rng)
            if calls is None:
                return None
            for call in calls:
                if call.ok and call.changes and not breaks_invariants(ctx.world, tool, user, call.arguments):
                    return call.arguments
        return None

    def _untaken(
        self, ctx: Grounding, tool: str, user: str, table: str, key: str, field: str, values: list, rng: random.Random
    ) -> dict | None:
        """Arguments for the branch not taken that would carry it out had the record's field a value selecting it:
        run in the world with only that field changed (`Explorer.call`'s `state`)."""
        for value in values[:3]:
            state = {(table, key, field): value}
            for _ in range(TRIES):
                args = ctx.ex.arguments(tool, user, key, rng)
                if args is None:
                    return None
                try:
                    call = ctx.ex.call(tool, user, args, state)
                except CounterfactualError:  # an environment reached through its functions: real records only
                    return None
                tried = [call] + [ctx.ex.call(tool, user, a, state) for a in repairs(args, call.error or "")]
                done = next((c for c in tried if c.ok and c.changes), None)
                if done is not None:
                    return done.arguments
        return None

    def _draft(self, ctx, user, table, key, cond, other, holds, args, alt) -> Draft:
        ex = ctx.ex
        taken = self.tool if holds else other
        subject, _ = ex.subject(taken)

        def clause(tool: str, a: dict) -> str:
            said = [phrase(n, v) for n, v in a.items() if n != ex.subject(tool)[0] and v is not None]
            return words(tool) + (f" (with {', '.join(said)})" if said else "")

        first = clause(self.tool, args if holds else alt)
        second = clause(other, alt if holds else args)
        field, allowed = cond
        values = " or ".join(speak(v) for v in allowed)
        thing = f"{singular(words(table))} {key}"
        utterance = (f"Please look at my {thing}: if its {words(field)} is {values}, {first}; "
                     f"otherwise, {second}.")  # fmt: skip
        details = {n: say(v) for n, v in args.items() if n != subject and v is not None}
        other_subject = ex.subject(self.tool if not holds else other)[0]
        details[f"{IF}{field}"] = json.dumps(allowed)  # the condition, for the rule that names a wrong branch
        details.update({f"{UNTAKEN}{n}": say(v) for n, v in alt.items() if n != other_subject and v is not None})
        request = Request(intent=f"{CONDITIONAL_INTENT}{self.tool}|{other}", utterance=utterance, record_id=key,
                          details=details)  # fmt: skip
        goal = f"About your {thing}: if its {words(field)} is {values}, {first}; otherwise, {second}."
        reads = gold_reads(ctx, user, table, key)
        return Draft(CONDITIONAL + self.tool, request, goal, reads, act(taken, **args), None, (key,), 2)
