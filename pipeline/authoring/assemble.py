"""From drafts to a task: authentication, gold actions, checks, the customer's script and its messes.

`assemble` builds the task for given messes; `gold_problems` is the first verification step shared by
every generator: the gold actions must all succeed when replayed in the world, and each forbidden write
must be refused at its point in the conversation.
"""

from __future__ import annotations

import random
from typing import Any

from pipeline.authoring.drafts import Draft
from pipeline.authoring.kit import Grounding, SynthesisKit, authenticate
from pipeline.dataset import (
    Action,
    KnownInfo,
    Messes,
    NoWritesCheck,
    Provenance,
    Request,
    Task,
    TaskCheck,
    UserScript,
    replay_actions,
)
from pipeline.world import World, execute


def random_messes(ctx: Grounding, customer: Any, requests: list[Request], rng: random.Random) -> Messes:
    """The messes of a plain generated task: each one that fits, on at a fixed rate."""
    return Messes(
        forgot_email=ctx.identifiable_without_email(customer) and rng.random() < 0.3,
        vague_item=any(r.vague_utterance for r in requests) and rng.random() < 0.5,
        also_request=len(requests) > 1 and rng.random() < 0.5,
        pushback=any(r.expect == "refused" for r in requests) and rng.random() < 0.5,
    )


def gold_actions(auth: Action, drafts: list[Draft]) -> list[Action]:
    """Authentication, then per request its reads (not repeated until a write changes the state) and write."""
    gold, seen = [auth], set()
    for i, d in enumerate(drafts):
        for read in d.reads:
            key = (read.name, tuple(sorted(read.arguments.items())))
            if key not in seen:
                seen.add(key)
                gold.append(read.model_copy(update={"request": i}))
        if d.write is not None:
            gold.append(d.write.model_copy(update={"request": i}))
            seen.clear()  # later requests read fresh state
    return gold


def assemble(
    kit: SynthesisKit,
    world: World,
    user_id: str,
    customer: Any,
    drafts: list[Draft],
    template: str,
    messes: Messes,
    task_id: str,
    *,
    underspecified: bool = False,
    provenance: dict | None = None,
) -> Task:
    """The task for these drafts and messes; `provenance` adds or overrides provenance fields."""
    known = kit.known(customer)
    requests = [d.request for d in drafts]
    if underspecified:
        requests = [kit.unspecify(r) or r for r in requests]
    gold = gold_actions(authenticate(world.domain.tools, known, messes.forgot_email), drafts)
    session = replay_actions(world, gold)
    checks: list[TaskCheck] = kit.checks(session, drafts)
    if not any(d.write for d in drafts):  # a kit's answers to questions stay
        checks = [NoWritesCheck(), *(c for c in checks if c.kind == "communicated")]
    on = {**messes.model_dump(), "underspecified": underspecified}
    notes = " ".join(kit.notes[k] for k, v in on.items() if v)
    goal = f"You are {_who(known, user_id)}. " + " Then: ".join(d.goal for d in drafts) + " " + notes
    dials: dict[str, int | bool | str] = {
        **on,
        "requests": len(drafts),
        "writes": sum(d.write is not None for d in drafts),
        "refusals": sum(d.forbidden is not None for d in drafts),
        "entities": sum(d.entities for d in drafts),
    }
    if len(drafts) > 1:
        dials["parts"] = "+".join(d.template for d in drafts)
    extra = dict(provenance or {})
    dials.update(extra.pop("dials", {}))
    return Task(
        id=task_id,
        world=world.name,
        customer_user_id=user_id,
        user_script=UserScript(goal=goal.strip(), known=known, requests=requests, messes=messes),
        gold_actions=gold,
        checks=checks,
        provenance=Provenance(source="synthesized", template=template, dials=dials, **extra),
    )


def _who(known: KnownInfo, user_id: str) -> str:
    """Whom the customer plays: their name, else the id their record has (never a missing name)."""
    return known.called or f"the customer with id {known.user_id or user_id}"


def gold_problems(world: World, task: Task, drafts: list[Draft]) -> list[tuple[str, str]]:
    """(kind, detail) for each way the gold actions fail: 'gold_refused' or 'forbidden_allowed'."""
    session = replay_actions(world, task.gold_actions)
    problems = [("gold_refused", f"{e.name}: {e.error}") for e in session.log if not e.ok]
    if problems:
        return problems
    for i, d in enumerate(drafts):
        if d.forbidden is None:
            continue
        end = max(
            (k + 1 for k, a in enumerate(task.gold_actions) if a.request is not None and a.request <= i), default=1
        )
        probe = replay_actions(world, task.gold_actions[:end])
        if execute(probe, d.forbidden.name, d.forbidden.arguments).ok:
            problems.append(("forbidden_allowed", f"request {i}: {d.forbidden.name} would succeed"))
    return problems
