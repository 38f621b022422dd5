"""A candidate task: the recipe (`Spec`) and one grounding of it in the world (`build`).

The spec says what to make (the templates of its requests, the dials on, the failure mode it targets,
where it came from in the evolution); `build` finds a customer it fits and drafts every request from
that customer's real records, through the domain's synthesis kit. Regrounding is building again with the
next attempt number, which reshuffles the customers and skips those already tried.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from pipeline.authoring import Draft, Grounding, SynthesisKit, Taxonomy, Want, assemble
from pipeline.dataset import Messes, Task

MAX_USERS_TRIED = 300


@dataclass(frozen=True)
class Spec:
    """What to make: requests (templates, in sequence), dials on (as they were added), target mode."""

    parts: tuple[str, ...]
    mode: str
    dials: tuple[str, ...] = ()  # mess dials: forgot_email, vague_item, also_request, pushback, underspecified
    items: int | None = None  # items the first request changes or returns (2: multi_item; None: any)
    depth: int = 0
    parent: str | None = None
    user_hint: str | None = None  # try this customer first (the parent's)

    @property
    def template(self) -> str:
        return self.parts[0]

    def with_dial(self, dial: str) -> Spec:
        return self if dial in self.dials else replace(self, dials=(*self.dials, dial))

    def relaxed(self) -> Spec | None:
        """The spec with its most recently added difficulty removed (None when nothing is left to relax)."""
        if self.dials:
            return replace(self, dials=self.dials[:-1])
        if self.items and self.items > 1:
            return replace(self, items=None)
        if len(self.parts) > 1:
            return replace(self, parts=self.parts[:-1])
        return None

    def realizable(self, taxonomy: Taxonomy) -> bool:
        """Whether every dial on can apply to these templates at all."""
        specs = [taxonomy[p] for p in self.parts]
        need = {
            "vague_item": any(s.items for s in specs),
            "pushback": any(s.outcome == "refused" for s in specs),
            "also_request": len(specs) > 1,
            "underspecified": any(s.record and s.omissible for s in specs),
        }
        return all(need.get(d, True) for d in self.dials) and (self.items is None or specs[0].items)


@dataclass
class Candidate:
    """One grounding of a spec; `tried` are customers already used by earlier attempts."""

    spec: Spec
    task_id: str
    attempt: int = 0
    task: Task | None = None
    drafts: list[Draft] = field(default_factory=list)
    tried: set[str] = field(default_factory=set)
    provenance: dict = field(default_factory=dict)  # what `build` was given, so a rework keeps it


def build(
    kit: SynthesisKit,
    ctx: Grounding,
    spec: Spec,
    task_id: str,
    seed: int,
    attempt: int = 0,
    tried: set[str] | None = None,
    provenance: dict | None = None,
) -> Candidate:
    """Ground `spec` in the first fitting customer; `candidate.task` is None when no customer fits."""
    tried = set(tried or ())
    rng = random.Random(f"{ctx.world.name}:{seed}:{task_id}:{attempt}")
    customers = ctx.customers
    users = list(customers)
    rng.shuffle(users)
    if spec.user_hint in customers and spec.user_hint not in tried:
        users.insert(0, spec.user_hint)
    for uid in [u for u in users if u not in tried][:MAX_USERS_TRIED]:
        user = ctx.customer(uid)
        if "forgot_email" in spec.dials and not ctx.identifiable_without_email(user):
            continue
        drafts: list[Draft] = []
        exclude: set[str] = set()
        for i, name in enumerate(spec.parts):
            want = Want(items=spec.items if i == 0 else None)
            d = kit.templates[name](ctx, user, rng, exclude, want)
            if d is None:
                break
            drafts.append(d)
            exclude |= set(d.records)
        if len(drafts) < len(spec.parts):
            continue
        under = "underspecified" in spec.dials
        if under and not any(kit.unspecify(d.request) for d in drafts):
            continue
        on = set(spec.dials)
        messes = Messes(
            forgot_email="forgot_email" in on,
            vague_item="vague_item" in on and any(d.request.vague_utterance for d in drafts),
            also_request="also_request" in on and len(drafts) > 1,
            pushback="pushback" in on and any(d.forbidden is not None for d in drafts),
        )
        extra = {"failure_mode": spec.mode, "depth": spec.depth, "parent": spec.parent, **(provenance or {})}
        extra["dials"] = {"parts": "+".join(spec.parts), **extra.get("dials", {})}
        task = assemble(
            kit, ctx.world, uid, user, drafts, spec.template, messes, task_id, underspecified=under, provenance=extra
        )
        return Candidate(spec, task_id, attempt, task, drafts, tried | {uid}, dict(provenance or {}))
    return Candidate(spec, task_id, attempt, None, [], tried, dict(provenance or {}))
