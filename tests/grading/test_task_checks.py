"""Each kind of task check, passing and failing, on a recorded trajectory's log and end state."""

from __future__ import annotations

import pytest

from pipeline.dataset.task import NoWritesCheck, OrderStatusCheck, ToolBudgetCheck, ToolNotCalledCheck, TransferCheck
from pipeline.grading import grade
from pipeline.grading.task_checks import evaluate_task_checks
from tests.grading.grading_helpers import Call, record

LOOKUP = Call("find_user_id_by_name_zip", {"first_name": "Emma", "last_name": "Smith", "zip": "10192"})
CANCEL = Call("cancel_pending_order", {"order_id": "#W2417020", "reason": "no longer needed"})
GOLD_STEPS = [("user", "hi"), LOOKUP, ("agent", "Cancel #W2417020?"), ("user", "yes"), CANCEL]


@pytest.fixture(scope="module")
def episode(tau2_world):
    return record(tau2_world, "69", GOLD_STEPS)


@pytest.mark.parametrize(
    ("check", "passes", "why"),
    [
        (OrderStatusCheck(order_id="#W2417020", status="cancelled"), True, None),
        (OrderStatusCheck(order_id="#W2417020", status="pending"), False, "is 'cancelled', expected 'pending'"),
        (OrderStatusCheck(order_id="#W5605613", status="delivered"), True, None),  # untouched: base status
        (NoWritesCheck(), False, "successful write step 1 cancel_pending_order"),
        (ToolBudgetCheck(limit=2), True, None),
        (ToolBudgetCheck(limit=1), False, "2 tool calls exceed the task's limit of 1"),
        (TransferCheck(expected=False), True, None),
        (TransferCheck(expected=True), False, "never transferred"),
        (ToolNotCalledCheck(tool="modify_user_address"), True, None),
        (ToolNotCalledCheck(tool="cancel_pending_order"), False, "cancel_pending_order was called 1 time(s)"),
    ],
)
def test_task_check(tau2_world, episode, check, passes, why):
    [result] = evaluate_task_checks([check], tau2_world, episode.world_log, episode.final_changed)
    assert result.name == f"task.{check.kind}"
    assert result.passed is passes
    if why:
        assert why in result.details[0]


def test_no_writes_and_transfer_pass_on_a_refusal(tau2_world):
    steps = [("user", "I want a human"), Call("transfer_to_human_agents", {"summary": "wants a human"})]
    ep = record(tau2_world, "50", steps)
    results = evaluate_task_checks([NoWritesCheck(), TransferCheck()], tau2_world, ep.world_log, ep.final_changed)
    assert [r.passed for r in results] == [True, True]


def test_repeated_kinds_get_unique_names_and_fail_the_verdict(tau2_world, tau2_tasks, episode):
    task = tau2_tasks["69"].model_copy(
        update={
            "checks": [
                OrderStatusCheck(order_id="#W2417020", status="cancelled"),
                OrderStatusCheck(order_id="#W3614011", status="cancelled"),
            ]
        }
    )
    verdict = grade(tau2_world, task, episode)
    assert [c.name for c in verdict.components if c.name.startswith("task.")] == [
        "task.order_status",
        "task.order_status.2",
    ]
    assert verdict.failed_components == ["task.order_status.2"]
