"""Taxonomy and coverage: every write and refusal has a template, cells and the tracker's steering."""

from __future__ import annotations

import random

from pipeline.authoring.coverage import CoverageTracker, task_cells
from pipeline.authoring.taxonomy import PLAIN
from pipeline.domains.retail.synthesis import RETAIL_KIT, TAXONOMY
from pipeline.domains.retail.tools import WRITE_TOOLS
from pipeline.grading.failure_modes import FAILURE_MODES
from pipeline.synth.candidate import Spec
from pipeline.synth.evolve import apply_dial, descendant
from tests.synth.synth_helpers import synthesized


def test_every_write_and_refusal_kind_has_a_template_tagged_with_modes():
    assert {s.tool for s in TAXONOMY.values() if s.outcome == "done"} == set(WRITE_TOOLS)
    refusals = {s.refusal for s in TAXONOMY.values() if s.outcome == "refused"}
    assert refusals == {
        "wrong_status",
        "another_customer",
        "bad_cancel_reason",
        "gift_card_short",
        "second_modification",
    }
    for s in TAXONOMY.values():
        assert s.modes and set(s.modes) <= set(FAILURE_MODES)
    for mode in FAILURE_MODES:
        assert TAXONOMY.templates_for(mode, "done"), mode
    assert TAXONOMY.templates_for("misread", "refused")  # wrong-status refusals test whether the status was read


def test_cells_are_template_dial_outcome_with_no_outcomes():
    all_cells = TAXONOMY.cells()
    assert ("cancel_wrong_status", "pushback", "refused") in all_cells
    assert ("cancel", "pushback", "done") not in all_cells  # nothing to push back on
    assert ("modify_user_address", "underspecified", "done") not in all_cells  # no order to leave out
    assert {c[2] for c in all_cells} == {"done", "refused"}
    assert set(TAXONOMY.cells("invention")) < set(all_cells)


def test_tracker_steers_to_uncovered_cells_of_the_mode():
    tracker = CoverageTracker(RETAIL_KIT)
    rng = random.Random(0)
    picked = {tracker.pick("misread", rng, {"refusal": 1.0}) for _ in range(20)}
    assert all("misread" in TAXONOMY[t].modes and d != PLAIN for t, d, _ in picked)
    for t in synthesized().tasks:
        tracker.record(t)
    uncovered = set(tracker.uncovered("misread"))
    for _ in range(10):
        cell = tracker.pick("misread", rng)
        assert cell in uncovered or not uncovered


def test_task_cells_of_a_two_request_task():
    task = next(t for t in synthesized().tasks if t.provenance.dials["requests"] >= 2)
    got = task_cells(RETAIL_KIT, task)
    parts = str(task.provenance.dials["parts"]).split("+")
    assert {c[0] for c in got} <= set(parts)
    assert all(c[1] != PLAIN for c in got)


def test_descendants_add_the_cells_dial_and_keep_the_lineage():
    rng = random.Random(3)
    root = Spec(parts=("return",), mode="invention", items=1)
    child = descendant(TAXONOMY, root, "multi_item", "invention", {}, rng, parent_id="p", user_hint=None)
    assert child.items == 2 and child.depth == 1 and child.parent == "p" and child.template == "return"
    mixed = apply_dial(TAXONOMY, root, "refusal", "misread", rng, max_parts=3)
    assert TAXONOMY[mixed.parts[-1]].outcome == "refused" and "misread" in TAXONOMY[mixed.parts[-1]].modes
    assert apply_dial(TAXONOMY, root, "pushback", "misread", rng, max_parts=3) is None  # no refusal to push back on
    full = Spec(parts=("cancel", "return", "exchange"), mode="plan_adherence")
    assert apply_dial(TAXONOMY, full, "chained", "plan_adherence", rng, max_parts=3) is None
