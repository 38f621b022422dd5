"""Rework: a candidate that fails verification is diagnosed and changed, not silently dropped.

The diagnosis picks the repair. A grounding problem (a gold action refused, a forbidden write that would go
through, a static rule broken, a judge's rejection) is regrounded: built again on other customers and
entities. A spec no customer fits, a task the oracle cannot solve, or one the targeted flaw slips through
is relaxed: its most recently added difficulty is removed and it is built again (on the same customer
first); with nothing left to relax it is regrounded.
Only after `max_rework` repairs is it dropped, and every step is counted per template.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field, replace

from pipeline.authoring import Grounding, SynthesisKit
from pipeline.synth.candidate import Candidate, build
from pipeline.synth.verify import Verification, Verifier

log = logging.getLogger(__name__)
RELAX = frozenset({"no_fit", "oracle_failed", "flaw_undetected"})


@dataclass
class Outcome:
    candidate: Candidate
    verification: Verification
    history: list[tuple[str, str]] = field(default_factory=list)  # (diagnosis, repair) per rework
    status: str = "first_try"  # first_try | reworked | dropped
    failures: list[str] = field(default_factory=list)  # the diagnosis of every failed verification


@dataclass
class TemplateStats:
    first_try: int = 0
    reworked: int = 0
    dropped: int = 0
    diagnoses: Counter = field(default_factory=Counter)
    repairs: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        return {
            "first_try": self.first_try,
            "reworked": self.reworked,
            "dropped": self.dropped,
            "diagnoses": dict(sorted(self.diagnoses.items())),
            "repairs": dict(sorted(self.repairs.items())),
        }


class Reworker:
    def __init__(
        self, kit: SynthesisKit, ctx: Grounding, verifier: Verifier, seed: int = 0, max_rework: int = 3
    ) -> None:
        self.kit, self.ctx, self.verify, self.seed, self.max_rework = kit, ctx, verifier, seed, max_rework
        self.stats: dict[str, TemplateStats] = {}

    def process(self, cand: Candidate) -> Outcome:
        """Verify; on failure diagnose, repair and verify again, up to `max_rework` repairs."""
        history: list[tuple[str, str]] = []
        failures: list[str] = []
        while True:
            v = self.verify(cand)
            if v.ok:
                return self._count(Outcome(cand, v, history, "reworked" if history else "first_try", failures))
            failures.append(v.kind)
            if len(history) >= self.max_rework:
                break
            repair, nxt = self.repair(cand, v)
            history.append((v.kind, repair))
            log.debug("%s: %s (%s) → %s", cand.task_id, v.kind, "; ".join(v.details[:2]), repair)
            if nxt is None:
                break
            cand = nxt
        return self._count(Outcome(cand, v, history, "dropped", failures))

    def repair(self, cand: Candidate, v: Verification) -> tuple[str, Candidate | None]:
        """The repair for a diagnosis and the rebuilt candidate (None when nothing is left to try)."""
        spec = cand.spec
        if v.kind in RELAX:
            relaxed = spec.relaxed()
            if relaxed is not None:
                hint = cand.task.customer_user_id if cand.task else spec.user_hint
                nxt = build(
                    self.kit,
                    self.ctx,
                    replace(relaxed, user_hint=hint),
                    cand.task_id,
                    self.seed,
                    cand.attempt + 1,
                    provenance=_rework_note(cand),
                )
                return f"relax:{_removed(spec, relaxed)}", nxt
        nxt = build(
            self.kit,
            self.ctx,
            spec,
            cand.task_id,
            self.seed,
            cand.attempt + 1,
            cand.tried,
            provenance=_rework_note(cand),
        )
        if nxt.task is None and v.kind == "no_fit":
            return "reground", None
        return "reground", nxt

    def _count(self, out: Outcome) -> Outcome:
        st = self.stats.setdefault(out.candidate.spec.template, TemplateStats())
        setattr(st, out.status, getattr(st, out.status) + 1)
        st.diagnoses.update(out.failures)
        st.repairs.update(r.split(":")[0] for _, r in out.history)
        return out


def _rework_note(cand: Candidate) -> dict:
    """Provenance of a rebuilt candidate: what the first build was given, and how many repairs it has had."""
    return {**cand.provenance, "dials": {**cand.provenance.get("dials", {}), "reworks": cand.attempt + 1}}


def _removed(old, new) -> str:
    if old.dials != new.dials:
        return old.dials[-1]
    if old.items != new.items:
        return "multi_item"
    return f"part:{old.parts[-1]}"
