"""diff_states: field paths and the three diff kinds, against the base world."""

from __future__ import annotations

import copy

from pipeline.domains.retail.schema import dump_record
from pipeline.grading.state_diff import count_by_kind, describe_diff, diff_states, summarize_diffs

ORDER = "#W2417020"  # pending, paid 2674.4 with gift_card_8541487 (user emma_smith_8564)


def _order(world) -> dict:
    return dump_record(world.table("orders")[ORDER])


def test_equal_deltas_have_no_diffs(tau2_world):
    rec = _order(tau2_world)
    rec["status"] = "cancelled"
    delta = {"orders": {ORDER: rec}}
    assert diff_states(tau2_world, delta, copy.deepcopy(delta)) == []
    assert diff_states(tau2_world, {}, {"orders": {}, "users": {}}) == []


def test_each_kind_is_named_with_its_path(tau2_world):
    base = _order(tau2_world)
    expected = copy.deepcopy(base)
    expected["status"] = "cancelled"
    expected["cancel_reason"] = "no longer needed"
    actual = copy.deepcopy(base)
    actual["cancel_reason"] = "ordered by mistake"
    actual["address"]["city"] = "Boston"
    diffs = {d.path: d for d in diff_states(tau2_world, {"orders": {ORDER: expected}}, {"orders": {ORDER: actual}})}
    assert set(diffs) == {"status", "cancel_reason", "address.city"}
    assert diffs["status"].kind == "missing_change"
    assert (diffs["status"].expected, diffs["status"].actual, diffs["status"].base) == (
        "cancelled",
        "pending",
        "pending",
    )
    assert diffs["cancel_reason"].kind == "wrong_value"
    assert diffs["cancel_reason"].base is None
    assert diffs["address.city"].kind == "unrequested_change"
    assert diffs["address.city"].table == "orders" and diffs["address.city"].key == ORDER


def test_lists_are_compared_by_index(tau2_world):
    base = _order(tau2_world)
    refund = {"transaction_type": "refund", "amount": 2674.4, "payment_method_id": "gift_card_8541487"}
    expected = copy.deepcopy(base)
    expected["payment_history"].append(refund)
    actual = copy.deepcopy(base)
    actual["payment_history"].append({**refund, "amount": 10.0})
    actual["payment_history"][0]["amount"] = 1.0
    diffs = {d.path: d for d in diff_states(tau2_world, {"orders": {ORDER: expected}}, {"orders": {ORDER: actual}})}
    assert set(diffs) == {"payment_history.0.amount", "payment_history.1.amount"}
    assert diffs["payment_history.1.amount"].kind == "wrong_value"
    assert diffs["payment_history.0.amount"].kind == "unrequested_change"
    # an element present on one side only is one diff at the element's path
    only_exp = diff_states(tau2_world, {"orders": {ORDER: expected}}, {})
    assert [(d.path, d.kind, d.actual) for d in only_exp] == [("payment_history.1", "missing_change", None)]


def test_record_absent_from_a_delta_is_the_base_record(tau2_world):
    user = dump_record(tau2_world.table("users")["emma_smith_8564"])
    user["payment_methods"]["gift_card_8541487"]["balance"] = 0.0
    diffs = diff_states(tau2_world, {}, {"users": {"emma_smith_8564": user}})
    assert [(d.kind, d.table, d.path) for d in diffs] == [
        ("unrequested_change", "users", "payment_methods.gift_card_8541487.balance")
    ]
    assert diffs[0].expected == diffs[0].base == 62.0


def test_summaries(tau2_world):
    base = _order(tau2_world)
    actual = {**base, "status": "cancelled"}
    diffs = diff_states(tau2_world, {}, {"orders": {ORDER: actual}})
    assert count_by_kind(diffs) == {"wrong_value": 0, "unrequested_change": 1, "missing_change": 0}
    assert describe_diff(diffs[0]) == (
        f"unrequested_change orders/{ORDER}.status: expected 'pending', got 'cancelled' (base 'pending')"
    )
    lines = summarize_diffs(diffs * 3, limit=2)
    assert lines[0] == "3 differing fields (3 unrequested_change)"
    assert lines[-1] == "... and 1 more"
    assert summarize_diffs([]) == []
