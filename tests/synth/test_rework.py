"""Rework: failing candidates are diagnosed and repaired (regrounded or relaxed), and every outcome is counted."""

from __future__ import annotations

from pipeline.dataset.replay import replay_actions
from pipeline.domains.retail.synthesis import RETAIL_KIT, Ctx
from pipeline.domains.retail.tools import WRITE_TOOLS
from pipeline.rollout.runner import Limits
from pipeline.synth.candidate import Spec, build
from pipeline.synth.rework import Reworker
from pipeline.synth.verify import Verifier, VerifyConfig
from tests.agents.scripted_helpers import small_world


def _planted(ctx: Ctx, template: str = "cancel"):
    """A sound candidate whose write then gets an order id the customer does not have (a grounding error)."""
    cand = build(RETAIL_KIT, ctx, Spec(parts=(template,), mode="invention"), "planted-0001", seed=0)
    assert cand.task is not None
    gold = list(cand.task.gold_actions)
    k = next(i for i, a in enumerate(gold) if a.name in WRITE_TOOLS)
    other = next(o for o in sorted(ctx.orders) if ctx.orders[o].user_id != cand.task.customer_user_id)
    gold[k] = gold[k].model_copy(update={"arguments": {**gold[k].arguments, "order_id": other}})
    cand.task = cand.task.model_copy(update={"gold_actions": gold})
    return cand


def test_rework_repairs_a_planted_grounding_error():
    world = small_world()
    ctx = Ctx(world)
    cand = _planted(ctx)
    bad_user = cand.task.customer_user_id
    verifier = Verifier(world)
    assert verifier(cand).kind == "gold_refused"
    rw = Reworker(RETAIL_KIT, ctx, verifier, seed=0)
    out = rw.process(cand)
    assert out.status == "reworked"
    assert out.history[0] == ("gold_refused", "reground")
    fixed = out.candidate.task
    assert fixed.customer_user_id != bad_user  # regrounded on another customer
    assert all(e.ok for e in replay_actions(world, fixed.gold_actions).log)
    assert out.verification.ok and out.verification.trajectory is not None
    stats = rw.stats["cancel"]
    assert (stats.first_try, stats.reworked, stats.dropped) == (0, 1, 0)
    assert stats.diagnoses["gold_refused"] == 1 and stats.repairs["reground"] == 1


def test_unrepaired_candidate_is_dropped_and_counted_not_lost():
    world = small_world()
    ctx = Ctx(world)
    rw = Reworker(RETAIL_KIT, ctx, Verifier(world), seed=0, max_rework=0)
    out = rw.process(_planted(ctx, "modify_address"))
    assert out.status == "dropped" and out.failures == ["gold_refused"]
    st = rw.stats["modify_address"]
    assert (st.first_try, st.reworked, st.dropped) == (0, 0, 1) and st.diagnoses["gold_refused"] == 1


def test_an_unsolvable_task_is_relaxed_until_the_oracle_solves_it():
    world = small_world()
    ctx = Ctx(world)
    spec = Spec(parts=("cancel", "modify_address"), mode="plan_adherence", dials=("also_request", "underspecified"))
    cand = build(RETAIL_KIT, ctx, spec, "long-0001", seed=0)
    verifier = Verifier(world, VerifyConfig(limits=Limits(max_turns=16)))  # too few turns for two requests
    assert verifier(cand).kind == "oracle_failed"
    out = Reworker(RETAIL_KIT, ctx, verifier, seed=0, max_rework=4).process(cand)
    assert out.status == "reworked", out.history
    assert all(kind == "oracle_failed" and repair.startswith("relax:") for kind, repair in out.history)
    assert [r for _, r in out.history][:2] == ["relax:underspecified", "relax:also_request"]
    assert len(out.candidate.spec.parts) < len(spec.parts) or not out.candidate.spec.dials
    assert out.candidate.task.provenance.dials["reworks"] == len(out.history)


def test_a_spec_no_customer_fits_is_relaxed():
    world = small_world()
    ctx = Ctx(world)
    # more requests than any customer has orders for: no fit, so the last added request is dropped
    spec = Spec(parts=("cancel", "cancel", "cancel", "cancel", "cancel", "cancel"), mode="plan_adherence")
    cand = build(RETAIL_KIT, ctx, spec, "nofit-0001", seed=0)
    assert cand.task is None
    out = Reworker(RETAIL_KIT, ctx, Verifier(world, VerifyConfig(flaw_check=False)), seed=0, max_rework=6).process(cand)
    assert out.history[0] == ("no_fit", "relax:part:cancel")
