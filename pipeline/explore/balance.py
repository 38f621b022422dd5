"""Which conditional pair and branch to draft next, so both branches of every pair drafted appear as gold.

A conditional request (`pipeline.explore.conditional`) pairs a heading write with a sibling, and the record's
state selects the branch. A draw completes a pair before it opens another: a pair drafted with one branch only
is drafted next with the other; else the pair drafted least, with its rarer branch. A branch is aimed at only
where a customer the draw may use owns a record whose field has a value selecting it (read from the world's
tables once per grounding), and no longer once drafting it failed for `MISSES` customers who own one. A pair
whose other branch cannot be reached this way is a gap (`gaps`): a top-up aims at it (`aimed`) or says why not
(`why_not`), rather than the pair passing for covered.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from pipeline.authoring import Draft
from pipeline.explore.kit import CONDITIONAL, Grounding, words
from pipeline.explore.pairs import Pair, key, live

MISSES = 12
"""Customers owning a record in the branch's state on whom drafting may fail before the branch is given up."""
SEARCH_TRIES = 12
"""Drafts an aimed search for a pair's missing branch tries, over the customers owning a record selecting it in
turn (arguments are formed at random, so a customer may serve on a second try)."""


def selecting(ctx: Grounding, tool: str, pair: Pair, holds: bool) -> set[Any]:
    """The field values selecting a branch where its write was seen to succeed: for the heading write, values the
    condition allows; for the sibling, values it succeeded on that the condition does not allow."""
    field, allowed, other = pair
    ok = {key(v) for v in ctx.model.writes[tool if holds else other].ok_states.get(field, [])}
    return ok & {key(v) for v in allowed} if holds else ok - {key(v) for v in allowed}


def holders(ctx: Grounding, tool: str, pair: Pair, holds: bool) -> list[str]:
    """The customers the draw may use who own a record of the tool's table in a state selecting the branch."""
    table, field = ctx.ex.subject(tool)[1], pair[0]
    if table is None:  # a write about no record of a table has no state to select a branch
        return []
    by_user = ctx.states.get((table, field))
    if by_user is None:  # per customer, the values the field has on their records of the table
        rows = ctx.world.table(table)
        by_user = {u: {key(getattr(rows[k], field, None)) for k in t.get(table, []) if k in rows}
                   for u, t in ctx.ex.owned.items()}  # fmt: skip
        ctx.states[(table, field)] = by_user
    wanted = selecting(ctx, tool, pair, holds)
    return [u for u in ctx.customers if by_user.get(u, set()) & wanted]


def reachable(ctx: Grounding, tool: str, pair: Pair, holds: bool) -> bool:
    return ctx.missed[(tool, pair[2], holds)] < MISSES and bool(holders(ctx, tool, pair, holds))


def choose(ctx: Grounding, tool: str, pairs: list[Pair], rng: random.Random) -> tuple[Pair, bool] | None:
    """(pair, branch) to draft next: a pair with one branch drafted first, then the pair drafted least; its
    rarer reachable branch (the rng breaks ties); None when no branch of any pair is reachable."""
    options = []
    for pair in pairs:
        n = {h: ctx.branches[(tool, pair[2], h)] for h in (True, False)}
        open_ = [h for h in (True, False) if reachable(ctx, tool, pair, h)]
        if not open_:
            continue
        aim = min(open_, key=lambda h: (n[h], rng.random()))
        options.append(((not (n[aim] == 0 < n[not aim]), sum(n.values())), pair, aim))
    if not options:
        return None
    best = min(o[0] for o in options)
    _, pair, aim = rng.choice([o for o in options if o[0] == best])
    return pair, aim


def missed(ctx: Grounding, tool: str, pair: Pair, holds: bool, user: str) -> None:
    """Count a customer owning a record in the branch's state on whom drafting it failed."""
    if user in holders(ctx, tool, pair, holds):
        ctx.missed[(tool, pair[2], holds)] += 1


def gaps(cov: dict[str, dict[str, int]]) -> list[str]:
    """'if__<tool>|<sibling>:holds' (or ':otherwise') for a pair a task set's coverage (`coverage`'s
    'conditional') has carried out one branch of only."""
    return [f"{CONDITIONAL}{p}:{'otherwise' if c['holds'] else 'holds'}" for p, c in cov.items()
            if bool(c["holds"]) != bool(c["otherwise"])]  # fmt: skip


def _parse(ctx: Any, aim: str) -> tuple[str, list[Pair], bool]:
    name, _, branch = aim.rpartition(":")
    tool, _, other = name.removeprefix(CONDITIONAL).partition("|")
    return tool, [p for p in live(ctx.model, tool) if p[2] == other], branch == "holds"


def aimed(templates: dict, ctx: Any, aim: str, rng: random.Random) -> Iterator[tuple[str, Draft]]:
    """Drafts of the pair's missing branch, on customers owning a record in a state selecting it."""
    tool, pairs, holds = _parse(ctx, aim)
    template = templates[CONDITIONAL + tool]
    for pair in pairs:
        users = rng.sample(holders(ctx, tool, pair, holds), len(holders(ctx, tool, pair, holds)))
        for user in (users * SEARCH_TRIES)[:SEARCH_TRIES]:
            draft = template.draft(ctx, user, rng, set(), pair, holds)
            if draft is not None:
                yield user, draft


def why_not(ctx: Any, aim: str) -> str:
    tool, pairs, holds = _parse(ctx, aim)
    table = ctx.ex.subject(tool)[1]
    users = {u for p in pairs for u in holders(ctx, tool, p, holds)}
    branch = "the condition holds" if holds else "it does not"
    if not users:
        fields = ", ".join(sorted({words(p[0]) for p in pairs}))
        return (f"no customer this draw may use owns a record of {table} whose {fields} selects the branch "
                f"where {branch}")  # fmt: skip
    return f"{SEARCH_TRIES} aimed drafts over the {len(users)} customers owning one found no call carrying it out"
