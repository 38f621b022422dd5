"""Task generation narrowed to chosen templates and to tasks without messes.

A small model learns one short family at a time: `generate_selected` asks the domain's task generator for
`templates` only and, with `plain`, keeps the tasks whose yes/no dials are all off (no forgotten email, no vague
item, no second request, no pushback), drawing more candidates until `n` are found or the world runs out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pipeline.dataset import Task

log = logging.getLogger(__name__)

OVERDRAW = (1, 4, 16)
"""Candidates drawn per wanted task, tried in turn until enough plain ones are found."""


def is_plain(task: Task) -> bool:
    """No mess turned on: every boolean dial of the task's provenance is false."""
    return not any(v for v in task.provenance.dials.values() if isinstance(v, bool))


def generate_selected(
    generate: Callable[..., list[Task]],
    world,
    n: int,
    seed: int = 0,
    templates: list[str] | None = None,
    plain: bool = False,
) -> list[Task]:
    """Up to `n` tasks from `generate(world, n, seed=..., templates=...)`, the plain ones only when asked.

    The same world, seed and selection give the same tasks; fewer than `n` come back only when the world
    cannot supply them (logged).
    """
    kwargs = {"templates": list(templates)} if templates else {}
    if not plain:
        return generate(world, n, seed=seed, **kwargs)
    found: list[Task] = []
    for factor in OVERDRAW:
        found = [t for t in generate(world, factor * n, seed=seed, **kwargs) if is_plain(t)][:n]
        if len(found) == n:
            break
    if len(found) < n:
        log.warning("only %d plain tasks of the %d asked for in %s", len(found), n, getattr(world, "name", world))
    return found
