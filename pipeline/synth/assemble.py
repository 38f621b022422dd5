"""From drafts to a task: authentication, gold actions, checks, the customer's script and its messes.

`assemble` builds the task for given messes; `gold_problems` is the first verification step shared by
every generator: the gold actions must all succeed when replayed in the world, and each forbidden write
must be refused at its point in the conversation.
"""

from __future__ import annotations

import random

from pipeline.dataset.task import (
    Action,
    KnownInfo,
    Messes,
    NoWritesCheck,
    OrderStatusCheck,
    Provenance,
    Request,
    Task,
    TaskCheck,
    UserScript,
)
from pipeline.synth.drafts import Ctx, Draft, act
from pipeline.world.retail.replay import replay_actions
from pipeline.world.retail.schema import User
from pipeline.world.retail.state import RetailWorld
from pipeline.world.retail.tools import execute

NOTES = {
    "forgot_email": "You do not remember your email address; you can give your name and zip code.",
    "vague_item": "At first you describe the items only vaguely.",
    "also_request": "You bring up your last request only after the others are done.",
    "pushback": "When the agent refuses, you push back once.",
    "underspecified": "At first you do not say which order you mean; you give the order id when asked.",
}


def random_messes(ctx: Ctx, user: User, requests: list[Request], rng: random.Random) -> Messes:
    """The messes of a plain generated task: each one that fits, on at a fixed rate."""
    return Messes(
        forgot_email=ctx.unique_name_zip(user) and rng.random() < 0.3,
        vague_item=any(r.vague_utterance for r in requests) and rng.random() < 0.5,
        also_request=len(requests) > 1 and rng.random() < 0.5,
        pushback=any(r.expect == "refused" for r in requests) and rng.random() < 0.5,
    )


def unspecify(req: Request) -> Request | None:
    """The request stated without its order id (the agent must ask which order); None if it cannot be."""
    said = f"my order {req.order_id}"
    if not req.order_id or said not in req.utterance:
        return None
    vague = req.vague_utterance.replace(said, "one of my orders") if req.vague_utterance else None
    return req.model_copy(
        update={"utterance": req.utterance.replace(said, "one of my orders"), "vague_utterance": vague}
    )


def gold_actions(user: User, drafts: list[Draft], by_name_zip: bool) -> list[Action]:
    """Authentication, then per request its reads (not repeated until a write changes the state) and write."""
    first, last, zip_ = user.name.first_name, user.name.last_name, user.address.zip
    auth = (
        act("find_user_id_by_name_zip", first_name=first, last_name=last, zip=zip_)
        if by_name_zip
        else act("find_user_id_by_email", email=user.email)
    )
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
    world: RetailWorld,
    user: User,
    drafts: list[Draft],
    template: str,
    messes: Messes,
    task_id: str,
    *,
    underspecified: bool = False,
    provenance: dict | None = None,
) -> Task:
    """The task for these drafts and messes; `provenance` adds or overrides provenance fields."""
    first, last, zip_ = user.name.first_name, user.name.last_name, user.address.zip
    requests = [d.request for d in drafts]
    if underspecified:
        requests = [unspecify(r) or r for r in requests]
    gold = gold_actions(user, drafts, messes.forgot_email)
    session = replay_actions(world, gold)
    checks: list[TaskCheck] = [
        OrderStatusCheck(order_id=d.request.order_id, status=session.order(d.request.order_id).status)
        for d in drafts
        if d.write is not None and d.request.order_id and session.order(d.request.order_id) is not None
    ]
    if not any(d.write for d in drafts):
        checks = [NoWritesCheck()]
    on = {**messes.model_dump(), "underspecified": underspecified}
    notes = " ".join(NOTES[k] for k, v in on.items() if v)
    goal = f"You are {first} {last}. " + " Then: ".join(d.goal for d in drafts) + " " + notes
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
        customer_user_id=user.user_id,
        user_script=UserScript(
            goal=goal.strip(),
            known=KnownInfo(email=user.email, first_name=first, last_name=last, zip=zip_),
            requests=requests,
            messes=messes,
        ),
        gold_actions=gold,
        checks=checks,
        provenance=Provenance(source="synthesized", template=template, dials=dials, **extra),
    )


def gold_problems(world: RetailWorld, task: Task, drafts: list[Draft]) -> list[tuple[str, str]]:
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
