"""Airline evaluation tasks: the templates in a cycle, grounded in one world, every gold action verified.

A candidate is kept only if replaying its gold actions in the world succeeds, each forbidden write is refused at
its point in the conversation, and every value of every gold write occurs in what the customer says or a gold
read shows (so an agent that follows the policy can ground it; an enumerated choice — cabin, trip type,
insurance — is the agent's pick and exempt). Same world and seed, same tasks.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from dataclasses import dataclass, field

from pipeline.dataset import Action, KnownInfo, Messes, NoWritesCheck, Provenance, Task, UserScript, replay_actions
from pipeline.domains.airline.grounding import Ctx, Draft, act
from pipeline.domains.airline.templates import TEMPLATES
from pipeline.domains.airline.vocabulary import VOCABULARY
from pipeline.errors import InputError
from pipeline.grading import EvidencePool
from pipeline.world import World, execute

log = logging.getLogger(__name__)
PAIR = "two_requests"
ALL_TEMPLATES: tuple[str, ...] = (*TEMPLATES, PAIR)
DEFAULT_CYCLE: tuple[str, ...] = (*TEMPLATES, PAIR, PAIR)
NOTES = {
    "also_request": "You bring up your last request only after the others are done.",
    "pushback": "When the agent refuses, you push back once.",
}


@dataclass
class GenerationResult:
    tasks: list[Task]
    skipped: Counter = field(default_factory=Counter)  # template:why → candidates dropped


def generate_tasks(world: World, n: int, seed: int = 0, templates: list[str] | None = None) -> list[Task]:
    """`n` tasks cycling over `templates` (default `DEFAULT_CYCLE`); fewer only when the world cannot supply them."""
    return generate(world, n, seed, templates).tasks


def generate(world: World, n: int, seed: int = 0, templates: list[str] | None = None) -> GenerationResult:
    names = list(templates or DEFAULT_CYCLE)
    unknown = sorted(set(names) - set(ALL_TEMPLATES))
    if unknown:
        raise InputError(f"unknown airline template(s) {unknown}; known: {list(ALL_TEMPLATES)}")
    ctx, result, attempt = Ctx(world), GenerationResult(tasks=[]), 0
    while len(result.tasks) < n and attempt < 4 * n + len(names):
        name = names[attempt % len(names)]
        rng = random.Random(f"{world.name}:{seed}:{attempt}")
        task, why = _make_task(ctx, name, rng, f"{world.name}-s{seed}-{len(result.tasks):04d}-{name}")
        if task is None:
            result.skipped[f"{name}:{why}"] += 1
        else:
            result.tasks.append(task)
        attempt += 1
    if result.skipped:
        log.info("airline generate_tasks(%s, n=%d, seed=%d): skipped %s", world.name, n, seed, dict(result.skipped))
    return result


def _make_task(ctx: Ctx, name: str, rng: random.Random, task_id: str) -> tuple[Task | None, str]:
    users = list(ctx.uids)
    rng.shuffle(users)
    pair = rng.sample(sorted(TEMPLATES), 2) if name == PAIR else None
    failed = ""
    for uid in users[:200]:
        user = ctx.users[uid]
        if pair:
            first = TEMPLATES[pair[0]](ctx, user, rng, set())
            second = TEMPLATES[pair[1]](ctx, user, rng, set(first.records)) if first else None
            drafts = [first, second] if first and second else None
        else:
            one = TEMPLATES[name](ctx, user, rng, set())
            drafts = [one] if one else None
        if drafts is None:
            continue
        messes = Messes(
            also_request=len(drafts) > 1 and rng.random() < 0.5,
            pushback=any(d.forbidden for d in drafts) and rng.random() < 0.5,
        )
        task = assemble(
            ctx.world, user.user_id, user.name.first_name, user.name.last_name, drafts, name, messes, task_id
        )
        problems = gold_problems(ctx.world, task, drafts)
        if not problems:
            return task, ""
        log.debug("%s: %s", task_id, problems)
        failed = problems[0][0]
    return None, failed or "no_fit"


def gold_actions(user_id: str, drafts: list[Draft]) -> list[Action]:
    """Identification, then per request its reads (not repeated until a write changes the state) and write."""
    gold, seen = [act("get_user_details", user_id=user_id)], set()
    for i, d in enumerate(drafts):
        for read in d.reads:
            key = (read.name, repr(sorted(read.arguments.items())))
            if key not in seen:
                seen.add(key)
                gold.append(read.model_copy(update={"request": i}))
        if d.write is not None:
            gold.append(d.write.model_copy(update={"request": i}))
            seen.clear()
    return gold


def assemble(world, user_id, first, last, drafts, template, messes, task_id) -> Task:
    on = {k: v for k, v in messes.model_dump().items() if v}
    goal = f"You are {first} {last} (user id {user_id}). " + " Then: ".join(d.goal for d in drafts)
    goal += "".join(f" {NOTES[k]}" for k in on)
    dials: dict[str, int | bool | str] = {
        **messes.model_dump(),
        "requests": len(drafts),
        "writes": sum(d.write is not None for d in drafts),
        "refusals": sum(d.forbidden is not None for d in drafts),
    }
    if len(drafts) > 1:
        dials["parts"] = "+".join(d.template for d in drafts)
    return Task(
        id=task_id,
        world=world.name,
        customer_user_id=user_id,
        user_script=UserScript(
            goal=goal.strip(),
            known=KnownInfo(user_id=user_id, first_name=first, last_name=last),
            requests=[d.request for d in drafts],
            messes=messes,
        ),
        gold_actions=gold_actions(user_id, drafts),
        checks=[] if any(d.write for d in drafts) else [NoWritesCheck()],
        provenance=Provenance(source="eval", template=template, dials=dials),
    )


def gold_problems(world: World, task: Task, drafts: list[Draft]) -> list[tuple[str, str]]:
    """(kind, detail) per way the gold fails: 'gold_refused', 'forbidden_allowed' or 'ungrounded'."""
    session = replay_actions(world, task.gold_actions)
    problems = [("gold_refused", f"{e.name}: {e.error}") for e in session.log if not e.ok]
    if problems:
        return problems
    said = [f"My user id is {task.customer_user_id}."]
    pool = EvidencePool()
    for text in said:
        pool.add(text)
    for i, d in enumerate(drafts):
        pool.add(d.request.utterance)
        for text in d.request.details.values():
            pool.add(text)
        if d.forbidden is not None:
            end = max(
                (k + 1 for k, a in enumerate(task.gold_actions) if a.request is not None and a.request <= i), default=1
            )
            probe = replay_actions(world, task.gold_actions[:end])
            if execute(probe, d.forbidden.name, d.forbidden.arguments).ok:
                problems.append(("forbidden_allowed", f"request {i}: {d.forbidden.name} would succeed"))
    for action, event in zip(task.gold_actions, session.log, strict=True):
        if action.name in VOCABULARY.write_intents:
            skip = [k for k, v in VOCABULARY.choices.items() if action.arguments.get(k) in v]
            missing = pool.ungrounded(action.arguments, skip)
            if missing:
                problems.append(("ungrounded", f"{action.name}: {', '.join(missing)}"))
        pool.add(event.result if isinstance(event.result, str) else None)
    return problems
