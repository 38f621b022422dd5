"""Evolution: harder descendants of accepted tasks, each aimed at a coverage cell of its target mode.

A child keeps its parent's first request (so the lineage stays one template's), inherits the parent's
dials, turns on the dial of the cell the coverage tracker picked, and then each other dial its failure
mode is sensitive to with the probability the targets give. Shape dials add requests: 'chained' another
write, 'refusal' a request that must be refused, 'with_write' a write beside a refusal, 'also_request' a
request brought up only at the end.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, replace

from pipeline.authoring import MESS_DIALS, Taxonomy
from pipeline.dataset import Task
from pipeline.errors import InputError
from pipeline.synth.candidate import Spec


@dataclass
class Lineage:
    """An accepted task and the spec it was built from."""

    spec: Spec
    task: Task
    generation: int


def _add_part(
    taxonomy: Taxonomy, spec: Spec, outcome: str, mode: str, rng: random.Random, max_parts: int
) -> Spec | None:
    if len(spec.parts) >= max_parts:
        return None
    # a request about the account itself (no record) comes up at most once per task
    pool = [t for t in taxonomy.templates_for(mode, outcome) if taxonomy[t].record or t not in spec.parts]
    pool = pool or [n for n, s in taxonomy.items() if s.outcome == outcome]
    return replace(spec, parts=(*spec.parts, rng.choice(pool)))


def apply_dial(taxonomy: Taxonomy, spec: Spec, dial: str, mode: str, rng: random.Random, max_parts: int) -> Spec | None:
    """`spec` with `dial` on; None when it cannot be (too many requests already, or it does not apply)."""
    if dial in ("chained", "refusal", "with_write"):
        if dial == "with_write" and taxonomy[spec.template].outcome != "refused":
            return None
        return _add_part(taxonomy, spec, "refused" if dial == "refusal" else "done", mode, rng, max_parts)
    if dial == "multi_item":
        return replace(spec, items=2) if taxonomy[spec.template].items else None
    if dial == "also_request" and len(spec.parts) < 2:
        grown = _add_part(taxonomy, spec, rng.choice(["done", "refused"]), mode, rng, max_parts)
        return grown.with_dial(dial) if grown else None
    if dial in MESS_DIALS:
        out = spec.with_dial(dial)
        return out if out.realizable(taxonomy) else None
    raise InputError(f"unknown dial {dial!r}")


def descendant(
    taxonomy: Taxonomy,
    parent: Spec,
    cell_dial: str,
    mode: str,
    dials: Mapping[str, float],
    rng: random.Random,
    *,
    parent_id: str | None,
    user_hint: str | None,
    max_parts: int = 3,
) -> Spec | None:
    """A child of `parent` with the cell's dial on, plus the mode's other dials at their probabilities."""
    child = replace(parent, mode=mode, depth=parent.depth + 1, parent=parent_id, user_hint=user_hint)
    dialled = apply_dial(taxonomy, child, cell_dial, mode, rng, max_parts)
    if dialled is None:
        return None
    child = dialled
    for dial, p in sorted(dials.items()):
        if dial != cell_dial and rng.random() < p:
            child = apply_dial(taxonomy, child, dial, mode, rng, max_parts) or child
    return child if child.realizable(taxonomy) else None


def parents_for(lineages: list[Lineage], template: str, max_depth: int, rng: random.Random) -> list[Lineage]:
    """Accepted tasks of `template` that may still grow, deeper ones first (jittered, so depths stay mixed)."""
    fits = [x for x in lineages if x.spec.template == template and x.spec.depth < max_depth]
    return sorted(fits, key=lambda x: -(x.spec.depth + rng.uniform(0.0, 2.0)))
