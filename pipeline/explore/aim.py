"""Generic tasks aimed at what a draw left uncovered (`pipeline.authoring.topup` asks; `GenericKit` answers).

The gaps are the world model's cells no task reaches: a write tool never carried out, a refusal group
(`pipeline.explore.coverage.ASKED`) never asked for, a conditional pair carried out on one branch only
(`pipeline.explore.balance`). A refusal group is aimed at first with the explorer's own
refused calls (`RefusalGroup.recipes`): each made by a customer the draw may use, naming no record of a customer
it may not, is run again in a fresh session and drafted if the tool still refuses it with the group's message
(another customer's record asked for as
`<tool>__other_customer` asks, without looking it up); then by an aimed search — the customer's
calls formed as exploring forms them, keeping only one the group's pattern matches — over a bounded sample of
customers.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from pipeline.authoring import Draft
from pipeline.dataset import Task
from pipeline.explore import balance
from pipeline.explore.coverage import coverage
from pipeline.explore.kit import CONDITIONAL, OTHER, REFUSED, pattern_regex

SEARCH_CUSTOMERS = 12
"""Customers an aimed search tries per gap."""


def gaps(ctx: Any, tasks: list[Task]) -> list[str]:
    """'<tool>' for a write tool no task carries out, '<tool>:<group>' for a refusal group no task asks for."""
    cov = coverage(ctx.model, tasks)
    out = [w for w, c in cov["writes"].items() if c["done"] == 0 and w not in ctx.model.unexplored]
    out += [f"{w}:{g}" for w, c in cov["writes"].items() for g, n in c["refusals"].items() if n == 0]
    return out + balance.gaps(cov["conditional"])


def aimed(templates: dict, ctx: Any, aim: str, rng: random.Random) -> Iterator[tuple[str, Draft]]:
    if aim.startswith(CONDITIONAL):
        yield from balance.aimed(templates, ctx, aim, rng)
        return
    tool, _, group = aim.partition(":")
    if not group:
        for user in rng.sample(ctx.customers, min(SEARCH_CUSTOMERS, len(ctx.customers))):
            draft = templates[tool].search(ctx, user, rng, set(), None, fallback_ok=False)
            if draft is not None:
                yield user, draft
        return
    g = next(r for r in ctx.model.writes[tool].refusals if r.name == group)
    other = g.category == "unauthorized"  # another customer's record: the customer cannot look it up first
    rx, template, allowed = (
        pattern_regex(g.pattern),
        templates[tool + (OTHER if other else REFUSED)],
        set(ctx.customers),
    )
    for recipe in g.recipes:
        if recipe.user in allowed:
            call = ctx.ex.call(tool, recipe.user, recipe.arguments)
            if not call.ok and rx.match(call.error or "") and owners(ctx, call) <= allowed:
                yield recipe.user, template.draft_of(ctx, recipe.user, recipe.arguments, call.error)
    for user in rng.sample(ctx.customers, min(SEARCH_CUSTOMERS, len(ctx.customers))):
        draft = template.search(ctx, user, rng, set(), rx, fallback_ok=False)
        if draft is not None:
            yield user, draft


def owners(ctx: Any, call: Any) -> set[str]:
    """The customers owning a record the call names (another customer's record too: a draw of one partition may
    name only its own customers' records)."""
    ex, out = ctx.ex, set()
    for arg, named in call.named.items():
        base, _, hop = arg.partition(".")
        table = ex.by_key[hop] if hop else ex.tools[call.tool].args[base].table
        for key, _ in named:
            who = ex.domain.owner(table, ex.world.table(table)[key])
            if who is not None:
                out.add(who)
    return out


def why_not(ctx: Any, aim: str) -> str:
    if aim.startswith(CONDITIONAL):
        return balance.why_not(ctx, aim)
    tool, _, group = aim.partition(":")
    searched = f"an aimed search over {min(SEARCH_CUSTOMERS, len(ctx.customers))} customers found no such call"
    if not group:
        return f"no successful call of {tool} changed anything; {searched}"
    g = next(r for r in ctx.model.writes[tool].refusals if r.name == group)
    allowed = set(ctx.customers)
    usable = sum(r.user in allowed and owners(ctx, ctx.ex.call(tool, r.user, r.arguments)) <= allowed
                 for r in g.recipes)  # fmt: skip
    if not g.recipes:
        recorded = "no refused call of it was recorded (a world model read from an older file)"
    elif not usable:
        recorded = (f"its {len(g.recipes)} recorded refused call(s) were made by, or name records of, customers this"
                    " draw may not use")  # fmt: skip
    else:
        recorded = f"{usable} recorded refused call(s) of usable customers are no longer refused that way"
    return f"{recorded}; {searched}"
