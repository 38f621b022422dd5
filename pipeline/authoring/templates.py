"""Plain task generation: every template in a cycle, grounded only in one world's data, gold verified.

`generate_tasks` combines drafts of the atomic templates of the world's domain (its synthesis kit) into tasks
(one request, or two of the same customer), turns on messes at fixed rates, and keeps a task only if replaying
its gold actions in the world succeeds and each forbidden write is refused at its point in the conversation.
Targeted, evolved and oracle-verified data is `pipeline.synth.synthesize`'s job.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from pipeline.authoring.assemble import assemble, gold_problems, random_messes
from pipeline.authoring.drafts import Draft, Want
from pipeline.authoring.kit import Grounding, SynthesisKit, template_kit_of
from pipeline.authoring.partition import Partitioned, needs_partition, partition
from pipeline.authoring.topup import top_up
from pipeline.dataset import Task
from pipeline.errors import InputError
from pipeline.world import World

log = logging.getLogger(__name__)

PAIR = "two_requests"
EVERY = "*"
"""In a cycle: every atomic template of the domain once, in taxonomy sequence."""
Side = Literal["eval", "train"]
# The default cycle: every template once, and two-request tasks a fifth of the time.
DEFAULT_CYCLE: tuple[str, ...] = (EVERY, PAIR, PAIR, PAIR)

__all__ = [
    "DEFAULT_CYCLE",
    "EVERY",
    "PAIR",
    "Draft",
    "GenerationResult",
    "all_templates",
    "expand_cycle",
    "generate",
    "generate_tasks",
]


@dataclass
class GenerationResult:
    tasks: list[Task]
    skipped: Counter = field(default_factory=Counter)  # template → tasks dropped (no fit, or replay failed)
    replaced: dict[str, str] = field(default_factory=dict)  # gap → 'replaced task id -> top-up task id'
    unreproduced: dict[str, str] = field(default_factory=dict)  # gap → why no task could be aimed at it


def all_templates(kit: SynthesisKit) -> tuple[str, ...]:
    """Every name a cycle may hold for this kit: its templates and the two-request pair."""
    return (*kit.templates, PAIR)


def expand_cycle(kit: SynthesisKit, templates: list[str] | tuple[str, ...] | None = None) -> list[str]:
    """The cycle with `EVERY` spelled out as the kit's templates (default: `DEFAULT_CYCLE`)."""
    names = [n for t in (templates or DEFAULT_CYCLE) for n in (kit.templates if t == EVERY else (t,))]
    unknown = sorted(set(names) - set(all_templates(kit)))
    if unknown:
        raise InputError(f"unknown template(s) {unknown}; known: {list(all_templates(kit))}")
    return names


def generate_tasks(
    world: World, n: int, seed: int = 0, templates: list[str] | None = None, side: Side = "eval"
) -> list[Task]:
    """`n` tasks cycling over `templates` (default `DEFAULT_CYCLE`); same world and seed, same tasks.

    `side`: in a world whose customers are split (`pipeline.authoring.partition`), the partition the tasks ground in —
    held-out tasks the evaluation one, the loop's anchors (training data) the training one.

    A template that fits no customer, or a candidate whose gold replay fails, is skipped and counted
    (see `generate`), so fewer than `n` tasks come back only when the world cannot supply them. With the default
    cycle, tasks aimed at the kit's gaps then replace tasks of the draw (`pipeline.authoring.topup`).
    """
    return generate(world, n, seed, templates, side).tasks


def generate(
    world: World, n: int, seed: int = 0, templates: list[str] | None = None, side: Side = "eval"
) -> GenerationResult:
    """Like `generate_tasks`, also counting per template the candidates dropped and why."""
    kit = template_kit_of(world.domain, needed_for="generate tasks")
    names = expand_cycle(kit, templates)
    ctx = kit.ground(world)
    extra: dict = {"depth": 0}
    if needs_partition(world):  # a world serving evaluation and training: the customers of the side asked for
        part = partition(world)
        ctx = Partitioned(ctx, part, side)
        extra["dials"] = {"partition": part.tag(side)}
    result = GenerationResult(tasks=[])
    attempt = 0
    while len(result.tasks) < n and attempt < 4 * n + len(names):
        name = names[attempt % len(names)]
        rng = random.Random(f"{world.name}:{seed}:{attempt}")
        task, why = _make_task(kit, ctx, name, rng, f"{world.name}-s{seed}-{len(result.tasks):04d}-{name}", extra)
        if task is None:
            result.skipped[f"{name}:{why}"] += 1
        else:
            result.tasks.append(task)
        attempt += 1
    if templates is None:  # the default cycle: then every gap the kit can aim at
        top_up(kit, ctx, result, seed, extra)
    if result.skipped:
        log.info("generate_tasks(%s, n=%d, seed=%d): skipped %s", world.name, n, seed, dict(result.skipped))
    return result


def _make_task(
    kit: SynthesisKit, ctx: Grounding, name: str, rng: random.Random, task_id: str, extra: dict
) -> tuple[Task | None, str]:
    users = list(ctx.customers)
    rng.shuffle(users)
    templates = kit.templates
    pair = rng.sample(sorted(templates), 2) if name == PAIR else None
    replay_failed = False
    for uid in users[:200]:
        user = ctx.customer(uid)
        if pair:
            first = templates[pair[0]](ctx, user, rng, set(), Want())
            second = templates[pair[1]](ctx, user, rng, set(first.records), Want()) if first else None
            drafts = [first, second] if first and second else None
        else:
            one = templates[name](ctx, user, rng, set(), Want())
            drafts = [one] if one else None
        if drafts is None:
            continue
        messes = random_messes(ctx, user, [d.request for d in drafts], rng)
        rate = kit.underspecify_rate  # drawn only when on, so a kit without it keeps its tasks
        omissible = all(kit.taxonomy[d.template].omissible for d in drafts)  # never another's record unsaid
        under = rate > 0 and rng.random() < rate and omissible and any(kit.unspecify(d.request) for d in drafts)
        task = assemble(kit, ctx.world, uid, user, drafts, name, messes, task_id, underspecified=under,
                        provenance=extra)  # fmt: skip
        problems = gold_problems(ctx.world, task, drafts)
        if not problems:
            return task, ""
        log.debug("%s: gold replay failed: %s", task_id, problems)
        replay_failed = True
    return None, "replay_failed" if replay_failed else "no_fit"
