"""Authorization in the tools: only the customer authenticated in this conversation is read in private or written."""

from __future__ import annotations

import copy

import pytest

from pipeline.domains.retail.tools import TOOLS, WRITE_TOOLS, execute

SOFIA, SOFIA_EMAIL, SOFIA_ORDER = "sofia_rossi_8776", "sofia.rossi2645@example.com", "#W5918442"
DAIKI, DAIKI_ORDER = "daiki_jackson_4362", "#W8306539"
OLIVIA_DELIVERED = "#W5866402"  # olivia_ito_3591, delivered
ADDRESS = {"address1": "9 Elm", "address2": "", "city": "Reno", "state": "NV", "country": "USA", "zip": "89501"}

# One valid call per private tool, each aimed at `who`'s records.
PRIVATE_CALLS = {
    "get_user_details": lambda who, order: {"user_id": who},
    "get_order_details": lambda who, order: {"order_id": order},
    "cancel_pending_order": lambda who, order: {"order_id": order, "reason": "no longer needed"},
    "modify_pending_order_address": lambda who, order: {"order_id": order, **ADDRESS},
    "modify_pending_order_payment": lambda who, order: {"order_id": order, "payment_method_id": "paypal_1"},
    "modify_pending_order_items": lambda who, order: {
        "order_id": order,
        "item_ids": ["1"],
        "new_item_ids": ["2"],
        "payment_method_id": "paypal_1",
    },
    "return_delivered_order_items": lambda who, order: {
        "order_id": order,
        "item_ids": ["1"],
        "payment_method_id": "paypal_1",
    },
    "exchange_delivered_order_items": lambda who, order: {
        "order_id": order,
        "item_ids": ["1"],
        "new_item_ids": ["2"],
        "payment_method_id": "paypal_1",
    },
    "modify_user_address": lambda who, order: {"user_id": who, **ADDRESS},
}


def test_every_private_tool_is_covered():
    assert set(PRIVATE_CALLS) == {n for n, t in TOOLS.tools.items() if t.private}
    assert set(PRIVATE_CALLS) >= WRITE_TOOLS


def _assert_refused_unauthorized(session, name, arguments, fragment):
    before = (session.state_hash(), copy.deepcopy(session.changed()))
    event = execute(session, name, arguments)
    assert not event.ok
    assert event.error_category == "unauthorized", event.error
    assert fragment in event.error
    assert (session.state_hash(), session.changed()) == before
    assert session.log[-1] is event and event.ok is False
    assert event.arguments == arguments
    return event


@pytest.mark.parametrize("name", sorted(PRIVATE_CALLS))
def test_private_tools_refused_before_authentication(tau2_world, name):
    s = tau2_world.session()
    event = _assert_refused_unauthorized(
        s, name, PRIVATE_CALLS[name](SOFIA, SOFIA_ORDER), "no customer is authenticated"
    )
    assert event.authenticated_user_id is None
    assert event.touched == []
    assert "find the user id" in event.content


@pytest.mark.parametrize("name", sorted(PRIVATE_CALLS))
def test_private_tools_refused_for_another_customer(tau2_world, name):
    s = tau2_world.session()
    assert execute(s, "find_user_id_by_email", {"email": SOFIA_EMAIL}).ok
    order = OLIVIA_DELIVERED if "delivered" in name else DAIKI_ORDER
    event = _assert_refused_unauthorized(s, name, PRIVATE_CALLS[name](DAIKI, order), "another customer")
    assert event.authenticated_user_id == SOFIA


def test_cross_customer_write_refused_then_own_write_allowed(tau2_world):
    s = tau2_world.session(authenticated_user_id=SOFIA)
    _assert_refused_unauthorized(
        s, "cancel_pending_order", {"order_id": DAIKI_ORDER, "reason": "no longer needed"}, "another customer"
    )
    assert s.order(DAIKI_ORDER).status == "pending"
    event = execute(s, "cancel_pending_order", {"order_id": SOFIA_ORDER, "reason": "no longer needed"})
    assert event.ok
    assert event.authenticated_user_id == SOFIA
    assert event.kind == "write"
    assert event.touched == [("orders", SOFIA_ORDER)]


def test_second_customer_cannot_be_authenticated(tau2_world):
    s = tau2_world.session()
    assert execute(s, "find_user_id_by_email", {"email": SOFIA_EMAIL}).ok
    event = execute(s, "find_user_id_by_name_zip", {"first_name": "Daiki", "last_name": "Jackson", "zip": "80284"})
    assert not event.ok and event.error_category == "unauthorized"
    assert "already authenticated as another customer" in event.error
    assert s.authenticated_user_id == SOFIA
    event = execute(s, "find_user_id_by_email", {"email": "daiki.jackson9202@example.com"})
    assert not event.ok and event.error_category == "unauthorized"
    assert s.authenticated_user_id == SOFIA
    # the same customer again is fine, by either route
    assert execute(s, "find_user_id_by_name_zip", {"first_name": "Sofia", "last_name": "Rossi", "zip": "78784"}).ok
    assert s.authenticated_user_id == SOFIA


def test_failed_lookup_does_not_authenticate(tau2_world):
    s = tau2_world.session()
    assert not execute(s, "find_user_id_by_email", {"email": "sofia.rossi@example.com"}).ok
    assert s.authenticated_user_id is None
    _assert_refused_unauthorized(s, "get_user_details", {"user_id": SOFIA}, "no customer is authenticated")


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("get_product_details", {"product_id": "6945232052"}),
        ("get_item_details", {"item_id": "9811090008"}),
        ("list_all_product_types", {}),
        ("calculate", {"expression": "1 + 1"}),
        ("transfer_to_human_agents", {"summary": "needs help"}),
    ],
)
def test_public_tools_need_no_authentication(tau2_world, name, arguments):
    s = tau2_world.session()
    event = execute(s, name, arguments)
    assert event.ok, event.error
    assert event.authenticated_user_id is None


def test_event_log_records_who_and_what(tau2_world):
    s = tau2_world.session()
    execute(s, "get_order_details", {"order_id": SOFIA_ORDER})
    execute(s, "find_user_id_by_email", {"email": SOFIA_EMAIL})
    execute(s, "get_order_details", {"order_id": SOFIA_ORDER})
    execute(s, "modify_user_address", {"user_id": SOFIA, **ADDRESS})
    execute(s, "modify_pending_order_address", {"order_id": DAIKI_ORDER, **ADDRESS})
    log = [e.to_dict() for e in s.log]
    assert [e["step"] for e in log] == [0, 1, 2, 3, 4]
    assert [e["name"] for e in log] == [
        "get_order_details",
        "find_user_id_by_email",
        "get_order_details",
        "modify_user_address",
        "modify_pending_order_address",
    ]
    assert [e["ok"] for e in log] == [False, True, True, True, False]
    assert [e["kind"] for e in log] == ["read", "identity", "read", "write", "write"]
    assert [e["error_category"] for e in log] == ["unauthorized", None, None, None, "unauthorized"]
    assert [e["authenticated_user_id"] for e in log[2:]] == [SOFIA, SOFIA, SOFIA]
    assert log[1]["result"] == SOFIA
    assert log[3]["touched"] == [["users", SOFIA]]
    assert log[2]["touched"] == [] and log[4]["touched"] == []
    assert log[3]["arguments"] == {"user_id": SOFIA, **ADDRESS}
