"""Static checks: each fails for its own reason, on hand-built trajectories and on crafted end states."""

from __future__ import annotations

import pytest

from pipeline.domains.retail.invariants import check_gift_card_balances, check_refund_ceiling, check_status_transitions
from pipeline.domains.retail.schema import dump_record
from pipeline.grading import grade
from pipeline.grading.static_checks import StaticInput, affirms
from pipeline.rollout.runner import Limits
from tests.grading.grading_helpers import Call, record

EMMA = "emma_smith_8564"
LOOKUP = Call("find_user_id_by_name_zip", {"first_name": "Emma", "last_name": "Smith", "zip": "10192"})
CANCEL = Call("cancel_pending_order", {"order_id": "#W2417020", "reason": "no longer needed"})  # task 69's gold write
ASK = ("agent", "I will cancel order #W2417020 because it is no longer needed. Shall I go ahead?")
YES = ("user", "Yes, please cancel it.")


@pytest.fixture
def task69(tau2_tasks):
    return tau2_tasks["69"]


def _grade(world, task, steps, **kw):
    limits = kw.pop("limits", None)
    return grade(world, task, record(world, task.id, steps, **kw), limits=limits, **kw)


def _failed(verdict) -> set[str]:
    return set(verdict.failed_components)


def test_write_before_authentication_fails_authorization(tau2_world, task69):
    steps = [("user", "Cancel #W2417020"), ASK, YES, CANCEL, LOOKUP, ASK, YES, CANCEL]
    verdict = _grade(tau2_world, task69, steps)
    assert _failed(verdict) == {"static.authorization"}  # the end state is still right
    assert "no customer is authenticated" in verdict.component("static.authorization").details[0]


def test_cross_customer_write_fails_authorization(tau2_world, task69):
    other = Call("cancel_pending_order", {"order_id": "#W6247578", "reason": "no longer needed"})  # yusuf's
    steps = [("user", "hi"), LOOKUP, ASK, YES, CANCEL, ASK, YES, other]
    verdict = _grade(tau2_world, task69, steps)
    assert _failed(verdict) == {"static.authorization"}
    assert "#W6247578" in verdict.component("static.authorization").details[0]


def test_unauthorized_private_read_is_only_noted(tau2_world, task69):
    peek = Call("get_order_details", {"order_id": "#W6247578"})
    verdict = _grade(tau2_world, task69, [("user", "hi"), LOOKUP, peek, ASK, YES, CANCEL])
    assert verdict.passed
    assert verdict.component("static.authorization").notes
    assert any("unauthorized private read" in d for d in verdict.diagnostics)


def test_precondition_refused_write_fails_policy(tau2_world, task69):
    delivered = Call("cancel_pending_order", {"order_id": "#W5605613", "reason": "no longer needed"})
    verdict = _grade(tau2_world, task69, [("user", "hi"), LOOKUP, ASK, YES, delivered, ASK, YES, CANCEL])
    assert _failed(verdict) == {"static.policy_violation"}
    assert "delivered" in verdict.component("static.policy_violation").details[0]


def test_invalid_argument_write_is_not_a_policy_violation(tau2_world, task69):
    typo = Call("cancel_pending_order", {"order_id": "#W2417020"})  # missing reason
    assert _grade(tau2_world, task69, [("user", "hi"), LOOKUP, ASK, YES, typo, CANCEL]).passed


@pytest.mark.parametrize(
    "steps",
    [
        [("user", "Cancel #W2417020 please"), LOOKUP, CANCEL],  # never asked
        [("user", "hi"), LOOKUP, ASK, ("user", "No, wait. Yes, I mean, let me think."), CANCEL],  # did not affirm
        [("user", "hi"), LOOKUP, ASK, ("user", "What does that mean?"), CANCEL],
    ],
)
def test_write_without_confirmation_fails(tau2_world, task69, steps):
    verdict = _grade(tau2_world, task69, steps)
    assert _failed(verdict) == {"static.confirmation"}


def test_each_write_needs_its_own_confirmation(tau2_world, tau2_tasks):
    task = tau2_tasks["76"]  # two cancels, customer pre-authenticated (τ² gold has no look-up)
    a, b = (Call(x.name, x.arguments) for x in task.gold_actions)
    ok = [
        ("user", "hi"),
        ("agent", "Cancel the first?"),
        ("user", "yes"),
        a,
        ("agent", "And the second?"),
        ("user", "Yes."),
        b,
    ]
    once = [("user", "hi"), ("agent", "Cancel both?"), ("user", "yes"), a, b]
    assert _grade(tau2_world, task, ok, authenticated_user_id=task.customer_user_id).passed
    verdict = _grade(tau2_world, task, once, authenticated_user_id=task.customer_user_id)
    assert _failed(verdict) == {"static.confirmation"}
    assert len(verdict.component("static.confirmation").details) == 1


def test_tool_budget_exceeded(tau2_world, task69):
    steps = [("user", "hi"), LOOKUP, Call("get_user_details", {"user_id": EMMA}), ASK, YES, CANCEL]
    assert _grade(tau2_world, task69, steps, limits=Limits(max_tool_calls=3)).passed
    verdict = _grade(tau2_world, task69, steps, limits=Limits(max_tool_calls=2))
    assert _failed(verdict) == {"static.tool_budget"}
    assert verdict.component("static.tool_budget").details == ["3 tool calls exceed the budget of 2"]


@pytest.mark.parametrize(
    ("base_status", "order_id", "final", "legal"),
    [
        ("pending", "#W2417020", "cancelled", True),
        ("pending", "#W2417020", "pending (item modified)", True),
        ("pending", "#W2417020", "pending", True),
        ("pending", "#W2417020", "delivered", False),
        ("pending", "#W2417020", "return requested", False),
        ("delivered", "#W5605613", "return requested", True),
        ("delivered", "#W5605613", "exchange requested", True),
        ("delivered", "#W5605613", "cancelled", False),
        ("delivered", "#W5605613", "delivered", False),
    ],
)
def test_status_transitions(tau2_world, base_status, order_id, final, legal):
    rec = dump_record(tau2_world.table("orders")[order_id])
    assert rec["status"] == base_status
    rec["status"] = final
    result = check_status_transitions(StaticInput(tau2_world, [], {"orders": {order_id: rec}}))
    assert result.passed is legal
    if not legal:
        assert result.details == [f"order {order_id}: illegal change {base_status!r} -> {final!r}"]


def test_refund_ceiling(tau2_world):
    rec = dump_record(tau2_world.table("orders")["#W2417020"])
    refund = {"transaction_type": "refund", "amount": 2674.4, "payment_method_id": "gift_card_8541487"}
    rec["payment_history"].append(refund)
    assert check_refund_ceiling(StaticInput(tau2_world, [], {"orders": {"#W2417020": rec}})).passed
    rec["payment_history"].append({**refund, "amount": 1.0})
    result = check_refund_ceiling(StaticInput(tau2_world, [], {"orders": {"#W2417020": rec}}))
    assert not result.passed and "refunds 2675.40 exceed payments 2674.40" in result.details[0]


def test_gift_card_balance_never_negative(tau2_world):
    rec = dump_record(tau2_world.table("users")[EMMA])
    rec["payment_methods"]["gift_card_8541487"]["balance"] = 0.0
    assert check_gift_card_balances(StaticInput(tau2_world, [], {"users": {EMMA: rec}})).passed
    rec["payment_methods"]["gift_card_8541487"]["balance"] = -5.0
    result = check_gift_card_balances(StaticInput(tau2_world, [], {"users": {EMMA: rec}}))
    assert not result.passed and "gift_card_8541487" in result.details[0]


@pytest.mark.parametrize(
    ("text", "yes"),
    [
        ("Yes", True),
        ("yes please", True),
        ("That's right, YES.", True),
        ("Sure, do it", True),
        ("Please go ahead.", True),
        ("No.", False),
        ("No, yes is not what I meant", False),
        ("I'm not sure", False),
        ("yesterday I ordered it", False),
        ("", False),
        (None, False),
    ],
)
def test_affirms(text, yes):
    assert affirms(text) is yes
