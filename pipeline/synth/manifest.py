"""The manifest of a synthesis run: what was made (per mode, template, depth, generation, aim, outcome, request
count and dial), the coverage of the kit's cells, how candidates fared in rework, what the targeted flaw did to
each kept task, and the judge's verdicts (`Synthesizer.manifest`, written as manifest.json)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.authoring import DIALS
from pipeline.dataset import Task
from pipeline.synth.rework import Outcome
from pipeline.target import Targets


def synthesis_manifest(
    world: str,
    seed: int,
    dials: list[str] | None,
    generations: int,
    targets: Targets,
    tasks: list[Task],
    outcomes: list[Outcome],
    rework_stats: Mapping[str, Any],
    coverage: dict,
    items_argument: str | None,
) -> dict:
    kept = [o for o in outcomes if o.status != "dropped"]
    rework = {name: st.as_dict() for name, st in sorted(rework_stats.items())}
    totals = Counter(o.status for o in outcomes)
    flaw: dict[str, Counter] = {}
    for o in kept:
        flaw.setdefault(o.candidate.spec.mode, Counter())[o.verification.flaw] += 1
    return {
        "world": world,
        "seed": seed,
        "dials": dials,
        "tasks": len(tasks),
        "generations": generations,
        "targets": {m: t.count for m, t in targets.modes.items()},
        "counts": {
            "by_mode": count(t.provenance.failure_mode for t in tasks),
            "by_template": count(t.provenance.template for t in tasks),
            "by_depth": count(str(t.provenance.depth) for t in tasks),
            "by_generation": count(str(t.provenance.dials.get("generation")) for t in tasks),
            "by_aim": count(t.provenance.dials.get("aim") for t in tasks),
            "by_outcome": count(outcome_of(t) for t in tasks),
            "by_requests": count(str(t.provenance.dials.get("requests")) for t in tasks),
            "by_dial": {d: sum(1 for t in tasks if dial_on(t, d, items_argument)) for d in DIALS},
        },
        "coverage": coverage,
        "rework": {
            "totals": {k: totals.get(k, 0) for k in ("first_try", "reworked", "dropped")},
            "by_template": rework,
        },
        "flaw_check": {m: dict(sorted(c.items())) for m, c in sorted(flaw.items())},
        "judge": count(o.verification.judge for o in kept),
    }


def count(values: Iterable[Any]) -> dict[str, int]:
    """Occurrences of each value (None left out), sorted by value."""
    return dict(sorted(Counter(v for v in values if v is not None).items()))


def outcome_of(task: Task) -> str:
    """'done', 'refused', 'mixed' (both among its requests) or 'none'."""
    expects = {r.expect for r in task.user_script.requests}
    return "mixed" if len(expects) > 1 else expects.pop() if expects else "none"


def dial_on(task: Task, dial: str, items: str | None) -> bool:
    """Whether the task has the dial on (the shapes read from its counts and gold; `items`: the items argument)."""
    d = task.provenance.dials
    if dial == "chained":
        return int(d.get("writes", 0)) >= 2
    if dial in ("refusal", "with_write"):
        return int(d.get("refusals", 0)) >= 1 and int(d.get("writes", 0)) >= 1
    if dial == "multi_item":
        return items is not None and any(len(a.arguments.get(items, [])) >= 2 for a in task.gold_actions)
    return bool(d.get(dial))
