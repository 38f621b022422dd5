"""Coverage of (template × dial × outcome) cells, which steers each generation toward what is missing.

A task covers a cell for each of its requests: the request's template, each dial that is on and applies to
it, and the request's outcome ("done", or "refused" where the right answer is no). A single request with no
dial on covers the template's 'plain' cell.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Collection, Mapping

from pipeline.authoring.kit import SynthesisKit
from pipeline.authoring.taxonomy import PLAIN
from pipeline.dataset import Task

Cell = tuple[str, str, str]


def parts_of(task: Task) -> list[str]:
    parts = str(task.provenance.dials.get("parts") or task.provenance.template or "")
    return parts.split("+") if parts else []


def task_cells(kit: SynthesisKit, task: Task) -> set[Cell]:
    """The cells one task covers, in the taxonomy of the domain's kit (none for a template it lacks)."""
    d, m, reqs = task.provenance.dials, task.user_script.messes, task.user_script.requests
    writes, items = kit.taxonomy.writes(), kit.items_argument
    out: set[Cell] = set()
    for i, name in enumerate(parts_of(task)):
        spec = kit.taxonomy.get(name)
        if spec is None or i >= len(reqs):
            continue
        req = reqs[i]
        record = kit.record_of(req)
        write = next((a for a in task.gold_actions if a.request == i and a.name in writes), None)
        on = {
            "forgot_email": m.forgot_email,
            "also_request": m.also_request,
            "vague_item": m.vague_item and bool(req.vague_utterance),
            "underspecified": bool(d.get("underspecified") and record and record not in req.utterance),
            "pushback": m.pushback and req.expect == "refused",
            "chained": int(d.get("writes", 0)) >= 2 and req.expect == "done",
            "refusal": int(d.get("refusals", 0)) >= 1 and req.expect == "done",
            "with_write": int(d.get("writes", 0)) >= 1 and req.expect == "refused",
            "multi_item": write is not None and items is not None and len(write.arguments.get(items, [])) >= 2,
        }
        active = [k for k in spec.dials() if on.get(k)]
        out.update((name, k, req.expect) for k in active)
        if len(reqs) == 1 and not any(on.values()):
            out.add((name, PLAIN, req.expect))
    return out


class CoverageTracker:
    """Counts of tasks per cell; `pick` chooses the next cell to aim a new task at."""

    def __init__(self, kit: SynthesisKit) -> None:
        self.kit = kit
        self.counts: Counter[Cell] = Counter({c: 0 for c in kit.taxonomy.cells()})

    def record(self, task: Task) -> set[Cell]:
        got = task_cells(self.kit, task)
        self.counts.update(got)
        return got

    def uncovered(self, mode: str | None = None) -> list[Cell]:
        return [c for c in self.kit.taxonomy.cells(mode) if self.counts[c] == 0]

    def pick(
        self,
        mode: str,
        rng: random.Random,
        weights: Mapping[str, float] | None = None,
        allowed: Collection[str] | None = None,
    ) -> Cell:
        """An uncovered cell of a template tagged `mode` (else a least-covered one), favouring weighted dials.

        The 'plain' cells are left to the atomic generation; `weights` (dial → probability, from targets)
        make the dials a failure mode is most sensitive to come up first; `allowed` (None = all) limits the
        dials aimed at.
        """
        cells = self.kit.taxonomy.cells(mode)
        pool = [c for c in cells if c[1] != PLAIN and (allowed is None or c[1] in allowed)] or cells
        least = min(self.counts[c] for c in pool)
        todo = [c for c in pool if self.counts[c] == least]
        w = [0.1 + (weights or {}).get(c[1], 0.0) for c in todo]
        return rng.choices(todo, weights=w, k=1)[0]

    def summary(self) -> dict:
        total = len(self.counts)
        covered = [c for c, n in self.counts.items() if n]
        by_outcome: dict[str, dict[str, int]] = {}
        for (_, _, outcome), n in self.counts.items():
            row = by_outcome.setdefault(outcome, {"cells": 0, "covered": 0})
            row["cells"] += 1
            row["covered"] += bool(n)
        return {
            "cells": total,
            "covered": len(covered),
            "share": round(len(covered) / total, 4) if total else 0.0,
            "by_outcome": by_outcome,
            "missing": sorted("/".join(c) for c, n in self.counts.items() if not n),
            "counts": {"/".join(c): n for c, n in sorted(self.counts.items())},
        }
