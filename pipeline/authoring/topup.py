"""Topping up a plain draw: the cells its tasks leave uncovered, each asked for by a task aimed at it.

After the main draw of `pipeline.authoring.templates.generate`, the kit names its gaps (`SynthesisKit.gaps`: cells of
its coverage no task reaches, e.g. a refusal the tools implement that no task asks for) and offers drafts aimed at
each (`SynthesisKit.aimed`). A drafted task is kept only if its gold replays in a fresh session, as every task is;
it then *replaces* a task of the draw — one with as many writes and refusals first, then of the template the draw
holds most of, and only one whose loss uncovers nothing — so the count asked for stays the count returned; at
most `SHARE` of the draw is replaced, so its mix stays the cycle's. A gap with no verified task, none that may
give way, or no share left is reported with why (`GenerationResult.unreproduced`); each replacement is recorded
(`GenerationResult.replaced`, and the task's `top_up` dial).
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from typing import TYPE_CHECKING

from pipeline.authoring.assemble import assemble, gold_problems, random_messes
from pipeline.authoring.kit import Grounding, SynthesisKit
from pipeline.dataset import Task

if TYPE_CHECKING:
    from pipeline.authoring.templates import GenerationResult

log = logging.getLogger(__name__)

CANDIDATES = 4
"""Aimed drafts tried per gap before it is reported unreproduced."""
SCAN = 80
"""Tasks of the draw considered for giving way to a top-up."""
SHARE = 0.1
"""The most of a draw a top-up may replace, so the draw's mix stays what the cycle makes."""
TOP_UP = "top_up"


def top_up(kit: SynthesisKit, ctx: Grounding, result: GenerationResult, seed: int, extra: dict) -> None:
    """Replace tasks of `result` by tasks aimed at the kit's gaps, in place; record what was done and not done."""
    gaps = list(kit.gaps(ctx, result.tasks))
    budget = int(SHARE * len(result.tasks))
    for aim in list(gaps):
        if aim not in gaps:
            continue
        if len(result.replaced) >= budget:
            result.unreproduced[aim] = f"no share left: a top-up replaces at most {budget} of {len(result.tasks)} tasks"
            continue
        rng = random.Random(f"{ctx.world.name}:{seed}:{TOP_UP}:{aim}")
        task, why = aimed_task(kit, ctx, aim, rng, extra)
        if task is None:
            result.unreproduced[aim] = why
            continue
        place = _giving_way(kit, ctx, result.tasks, task, set(gaps) - {aim})
        if place is None:
            result.unreproduced[aim] = (
                f"no task of the draw may give way: each of the {min(SCAN, len(result.tasks))} tried is the only"
                " one covering something"
            )
            continue
        old = result.tasks[place]
        task = task.model_copy(update={"id": f"{ctx.world.name}-s{seed}-{place:04d}-{task.provenance.template}"})
        result.tasks[place] = task
        result.replaced[aim] = f"{old.id} -> {task.id}"
        gaps = list(kit.gaps(ctx, result.tasks))
    if result.replaced or result.unreproduced:
        log.info("top-up of %s: replaced %s; unreproduced %s", ctx.world.name, result.replaced, result.unreproduced)


def aimed_task(kit: SynthesisKit, ctx: Grounding, aim: str, rng: random.Random, extra: dict) -> tuple[Task | None, str]:
    """The first task from the kit's drafts aimed at `aim` whose gold replays; else (None, why)."""
    tried, failed = 0, []
    for uid, draft in kit.aimed(ctx, aim, rng):
        user = ctx.customer(uid)
        messes = random_messes(ctx, user, [draft.request], rng)
        dials = {**extra.get("dials", {}), TOP_UP: aim}
        task = assemble(kit, ctx.world, uid, user, [draft], draft.template, messes, f"{TOP_UP}-{aim}",
                        provenance={**extra, "dials": dials})  # fmt: skip
        problems = gold_problems(ctx.world, task, [draft])
        if not problems:
            return task, ""
        failed.append("; ".join(f"{k}: {d}" for k, d in problems))
        tried += 1
        if tried >= CANDIDATES:
            break
    if failed:
        return None, f"{tried} aimed task(s) failed their gold replay ({failed[0]})"
    return None, kit.why_not(ctx, aim)


def _giving_way(kit: SynthesisKit, ctx: Grounding, tasks: list[Task], task: Task, allowed: set[str]) -> int | None:
    """A task (not itself a top-up) whose replacement by `task` opens no gap beyond `allowed`: one with as many
    writes and refusals as `task` first (so the draw's mix of writes and refusals stays), then of the template the
    draw holds most of, the last one first (so a kind of task the draw has one of stays)."""
    count = Counter(t.provenance.template for t in tasks)
    shape = _shape(task)
    order = sorted(
        range(len(tasks)), key=lambda i: (_shape(tasks[i]) != shape, -count[tasks[i].provenance.template], -i)
    )
    for i in [i for i in order if TOP_UP not in tasks[i].provenance.dials][:SCAN]:
        trial = [*tasks[:i], task, *tasks[i + 1 :]]
        if set(kit.gaps(ctx, trial)) <= allowed:
            return i
    return None


def _shape(task: Task) -> tuple[int, int]:
    d = task.provenance.dials
    return int(d.get("writes", 0)), int(d.get("refusals", 0))
