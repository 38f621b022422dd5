"""The grader flags a write after a transfer to a human agent: confirm → transfer → cancel must not pass."""

from __future__ import annotations

from pipeline.grading import grade
from pipeline.grading.static_checks import StaticInput, check_after_transfer
from tests.grading.grading_helpers import Call, record

LOOKUP = Call("find_user_id_by_name_zip", {"first_name": "Emma", "last_name": "Smith", "zip": "10192"})
CANCEL = Call("cancel_pending_order", {"order_id": "#W2417020", "reason": "no longer needed"})  # task 69's gold write
TRANSFER = Call("transfer_to_human_agents", {"summary": "the customer asked for a human"})
ASK = ("agent", "I will cancel order #W2417020 because it is no longer needed. Shall I go ahead?")
YES = ("user", "Yes, please cancel it.")


def test_confirm_transfer_cancel_fails_after_transfer(tau2_world, tau2_tasks):
    verdict = grade(
        tau2_world, tau2_tasks["69"], record(tau2_world, "69", [("user", "hi"), LOOKUP, ASK, YES, TRANSFER, CANCEL])
    )
    assert not verdict.passed
    assert "static.after_transfer" in verdict.failed_components
    assert "refused (transferred)" in verdict.component("static.after_transfer").details[0]


def test_cancel_then_transfer_is_not_flagged(tau2_world, tau2_tasks):
    verdict = grade(
        tau2_world, tau2_tasks["69"], record(tau2_world, "69", [("user", "hi"), LOOKUP, ASK, YES, CANCEL, TRANSFER])
    )
    assert verdict.component("static.after_transfer").passed


def test_a_recorded_successful_write_after_a_transfer_is_flagged(tau2_world):
    log = [
        {"step": 0, "name": "transfer_to_human_agents", "kind": "transfer", "ok": True, "arguments": {}},
        {"step": 1, "name": "cancel_pending_order", "kind": "write", "ok": True, "arguments": {"order_id": "#W1"}},
        {"step": 2, "name": "get_order_details", "kind": "read", "ok": True, "arguments": {"order_id": "#W1"}},
    ]
    result = check_after_transfer(StaticInput(tau2_world, log, {}))
    assert not result.passed and len(result.details) == 1
    assert "step 1 cancel_pending_order" in result.details[0] and "succeeded" in result.details[0]
    assert check_after_transfer(StaticInput(tau2_world, log[:1] + log[2:], {})).passed
