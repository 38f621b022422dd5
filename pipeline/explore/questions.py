"""Requests no write serves, for any domain: questions about the customer's own records, whose answer the agent
must tell (a `communicated` check), and changes no tool makes (a field no write ever changed), which the agent must
refuse saying so."""

from __future__ import annotations

import random

from pipeline.authoring import Draft, Want, act
from pipeline.dataset import Request
from pipeline.explore.kit import (
    QUESTION,
    QUESTION_INTENT,
    UNSERVABLE,
    UNSERVABLE_INTENT,
    Customer,
    Grounding,
    gold_reads,
    refuse_note,
    singular,
    words,
)
from pipeline.explore.references import about_customer, identifying
from pipeline.explore.values import shared_values


def asked_field(request: Request) -> tuple[str, str] | None:
    """(table, field) a question asks about, from its intent."""
    if not request.intent.startswith(QUESTION_INTENT):
        return None
    table, _, field = request.intent.removeprefix(QUESTION_INTENT).partition(".")
    return table, field


class Question:
    """A question about one of the customer's own records, answered from what the read tool shows: a field the
    world model found enumerated (a status, a count), never the field naming the customer themselves."""

    def __init__(self, tool: str, unservable: bool = False) -> None:
        self.tool, self.unservable = tool, unservable

    def __call__(
        self, ctx: Grounding, customer: Customer, rng: random.Random, exclude: set[str], want: Want
    ) -> Draft | None:
        table = ctx.model.tools[self.tool].reads
        if table is None or table == ctx.ex.customer_table:
            return None
        if self.unservable:
            return self._unservable(ctx, customer, rng, exclude, table)
        fields = sorted(set(ctx.model.tables[table].enumerated) - about_customer(ctx.ex)[table])  # not 'its holder id'
        own = [k for k in sorted(ctx.ex.owned.get(customer.user_id, {}).get(table, [])) if k not in exclude]
        if not fields or not own:
            return None
        key, field = rng.choice(own), rng.choice(fields)
        if getattr(ctx.world.table(table)[key], field) is None:
            return None
        thing = f"{singular(words(table))} {key}"
        request = Request(intent=f"{QUESTION_INTENT}{table}.{field}", record_id=key,
                          utterance=f"Could you tell me the {words(field)} of my {thing}?")  # fmt: skip
        reads = gold_reads(ctx, customer.user_id, table, key)
        if not any(r.name == self.tool for r in reads):
            reads.append(act(self.tool, **{next(iter(ctx.model.tools[self.tool].args)): key}))
        goal = f"Ask for the {words(field)} of your {thing}; the agent must tell you."
        return Draft(QUESTION + self.tool, request, goal, reads, None, None, (key,), 1)

    def _unservable(self, ctx: Grounding, customer: Customer, rng, exclude: set[str], table: str) -> Draft | None:
        """A change to a field of the customer's record that no write tool ever changed (nor could be seen to), and
        that describes the record rather than names one (`pipeline.explore.references`)."""
        changed = {e.field for w in ctx.model.writes.values() for e in w.effects if e.table == table and not e.created}
        named = identifying(ctx.ex)[table] | {ctx.model.tables[table].key_field}
        own = [k for k in sorted(ctx.ex.owned.get(customer.user_id, {}).get(table, [])) if k not in exclude]
        untried = [t for t in ctx.model.unexplored  # a write never run that names such a record may serve it
                   if any(a.binds in ("key", "items") and a.table == table
                          for a in ctx.model.tools[t].args.values())]  # fmt: skip
        if not own or untried:
            return None
        key = rng.choice(own)
        record = ctx.world.table(table)[key]
        fields = [
            f
            for f, v in sorted(record.model_dump().items())
            if isinstance(v, str) and f not in changed and f not in named and v not in (customer.user_id, key)
        ]
        for field in rng.sample(fields, len(fields)):  # a new value the domain has words for, never made up
            current = getattr(record, field)
            enumerated = ctx.model.tables[table].enumerated.get(field) or shared_values(ctx.world, field)
            other = [v for v in enumerated if isinstance(v, str) and v.strip() and v != current]
            if other:
                break
        else:
            return None
        new = rng.choice(other)
        thing = f"{singular(words(table))} {key}"
        request = Request(intent=f"{UNSERVABLE_INTENT}{table}.{field}", record_id=key, expect="refused",
                          utterance=f"Please change the {words(field)} of my {thing} to {new}.")  # fmt: skip
        reads = gold_reads(ctx, customer.user_id, table, key)
        why = f"no tool can change the {words(field)} of a {singular(words(table))}"
        goal = f"Change the {words(field)} of your {thing} to {new}. {refuse_note(why)}"
        return Draft(UNSERVABLE + self.tool, request, goal, reads, None, None, (key,), 1)
