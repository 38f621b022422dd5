"""Each retail tool's semantics on hand-picked τ²-bench records, and that every refusal changes nothing."""

from __future__ import annotations

import copy
import json

import pytest

from pipeline.domains.retail import tools
from pipeline.domains.retail.schema import dump_record
from pipeline.domains.retail.tools import TRANSFER_MESSAGE, execute

# Hand-picked records of ../shared/tau2_retail/db.json (values checked against the file).
SOFIA = "sofia_rossi_8776"  # one credit card; pending #W5918442 (1463.7 by card), delivered #W8535951
SOFIA_CC = "credit_card_5051208"
DAIKI = "daiki_jackson_4362"  # only a gift card (61.0); pending #W8306539 paid 154.17 by that card
OMAR = "omar_kim_3528"  # gift card 91.0 + credit card; pending #W1080318, one T-shirt 53.43 paid by card
OMAR_GC, OMAR_CC = "gift_card_3749819", "credit_card_3577130"
ETHAN = "ethan_lopez_6291"  # pending #W6779827 paid 4079.45 by gift card (balance 49.0); has a credit card
ETHAN_GC, ETHAN_CC = "gift_card_7219486", "credit_card_9789590"
AARAV = "aarav_nguyen_7344"  # gift card 22.0 + paypal; pending #W2443586 (591.95 by paypal)
AARAV_GC, AARAV_PP = "gift_card_2742113", "paypal_7859314"
LIAM = "liam_lee_5696"  # pending #W7208030 holds Garden Hose 5753502325 twice (96.35 each); one credit card
LIAM_CC = "credit_card_5809636"
HOSE = "5753502325"
OLIVIA = "olivia_ito_3591"  # delivered #W5866402: espresso 6242772310 + sneakers 9727387530, paid by paypal
OLIVIA_PP, OLIVIA_CC, OLIVIA_GC = "paypal_8049766", "credit_card_9753331", "gift_card_7794233"
MOHAMED = "mohamed_smith_9224"  # delivered #W7808613: Smart Watch 9811090008 (370.38) by paypal; gift card 64.0
MOHAMED_GC = "gift_card_9832062"

NEW_ADDRESS = {
    "address1": "1 Test Street",
    "address2": "Unit 2",
    "city": "Springfield",
    "state": "IL",
    "country": "USA",
    "zip": "62701",
}


def run(session, name, **arguments):
    """A call that must succeed; returns the decoded result."""
    event = execute(session, name, arguments)
    assert event.ok, event.error
    try:
        return json.loads(event.result)
    except json.JSONDecodeError:
        return event.result


def snapshot(session):
    return session.state_hash(), copy.deepcopy(session.changed())


def refused(session, name, arguments, category, fragment):
    """A call that must be refused with `category`, mention `fragment`, and change nothing."""
    before = snapshot(session)
    n_log = len(session.log)
    event = execute(session, name, arguments)
    assert not event.ok, f"{name} should have been refused: {event.result}"
    assert event.error_category == category, event.error
    assert fragment.lower() in event.error.lower(), event.error
    assert event.content == f"Error: {event.error}"
    assert event.touched == []
    assert snapshot(session) == before
    assert len(session.log) == n_log + 1 and session.log[-1] is event
    return event


def user_of(world, user_id):
    return world.session(authenticated_user_id=user_id)


def base(world, table, key):
    return dump_record(world.table(table)[key])


# ---- look-ups -------------------------------------------------------------------------------
def test_find_user_by_email_is_case_insensitive_and_authenticates(tau2_world):
    s = tau2_world.session()
    assert run(s, "find_user_id_by_email", email="  Sofia.Rossi2645@EXAMPLE.com ") == SOFIA
    assert s.authenticated_user_id == SOFIA
    assert run(s, "find_user_id_by_email", email="sofia.rossi2645@example.com") == SOFIA  # same customer again
    refused(tau2_world.session(), "find_user_id_by_email", {"email": "nobody@example.com"}, "not_found", "not found")


def test_find_user_by_name_zip(tau2_world):
    s = tau2_world.session()
    assert run(s, "find_user_id_by_name_zip", first_name="sofia", last_name="ROSSI", zip="78784") == SOFIA
    assert s.authenticated_user_id == SOFIA
    s2 = tau2_world.session()
    refused(
        s2,
        "find_user_id_by_name_zip",
        {"first_name": "Sofia", "last_name": "Rossi", "zip": "78785"},
        "not_found",
        "not found",
    )
    assert s2.authenticated_user_id is None


def test_get_user_order_product_item_details(tau2_world):
    s = user_of(tau2_world, SOFIA)
    assert run(s, "get_user_details", user_id=SOFIA) == base(tau2_world, "users", SOFIA)
    assert run(s, "get_order_details", order_id="#W5918442") == base(tau2_world, "orders", "#W5918442")
    product = run(s, "get_product_details", product_id="6945232052")
    assert product == base(tau2_world, "products", "6945232052")
    assert product["name"] == "Smart Watch" and len(product["variants"]) == 16
    assert run(s, "get_item_details", item_id="9811090008") == {
        "item_id": "9811090008",
        "options": {"color": "silver", "band material": "leather", "display": "LCD"},
        "available": True,
        "price": 370.38,
    }
    refused(s, "get_order_details", {"order_id": "W5918442"}, "not_found", "order W5918442 not found")
    refused(s, "get_user_details", {"user_id": "nobody_1"}, "not_found", "user nobody_1 not found")
    refused(s, "get_product_details", {"product_id": "0"}, "not_found", "product 0 not found")
    refused(s, "get_item_details", {"item_id": "6945232052"}, "not_found", "item 6945232052 not found")


def test_order_details_reflect_this_sessions_writes(tau2_world):
    s = user_of(tau2_world, SOFIA)
    run(s, "cancel_pending_order", order_id="#W5918442", reason="ordered by mistake")
    assert run(s, "get_order_details", order_id="#W5918442")["status"] == "cancelled"


def test_list_all_product_types(tau2_world):
    types = run(tau2_world.session(), "list_all_product_types")
    assert len(types) == 50
    assert types["Smart Watch"] == "6945232052"
    assert list(types) == sorted(types)
    assert {v: k for k, v in types.items()} == {pid: p.name for pid, p in tau2_world.db.products.items()}


def test_calculate(tau2_world):
    s = tau2_world.session()
    assert run(s, "calculate", expression="(96.35 + 90.43) / 3") == 62.26
    assert run(s, "calculate", expression="2 + 2") == 4.0
    for expression, fragment in [
        ("price * 2", "only numbers"),
        ("open('x')", "only numbers"),
        ("(1).real", "only numbers"),
        ("9 ** 9", "only numbers"),
        ("9" * 400, "too large"),
        ("1 / 0", "division by zero"),
        ("1" * 501, "longer than"),
    ]:
        refused(s, "calculate", {"expression": expression}, "invalid_arguments", fragment)


def test_transfer_sets_the_flag_and_changes_no_record(tau2_world):
    s = tau2_world.session()
    before = s.state_hash()
    assert run(s, "transfer_to_human_agents", summary="wants a human") == "Transfer successful"
    assert s.transferred is True
    assert s.state_hash() == before
    assert TRANSFER_MESSAGE.isupper()


# ---- cancel -----------------------------------------------------------------------------------
def test_cancel_credit_card_order_refunds_and_leaves_user_untouched(tau2_world):
    s = user_of(tau2_world, SOFIA)
    order = run(s, "cancel_pending_order", order_id="#W5918442", reason="no longer needed")
    assert order["status"] == "cancelled"
    assert order["cancel_reason"] == "no longer needed"
    assert order["payment_history"] == [
        {"transaction_type": "payment", "amount": 1463.7, "payment_method_id": SOFIA_CC},
        {"transaction_type": "refund", "amount": 1463.7, "payment_method_id": SOFIA_CC},
    ]
    changed = s.changed()
    assert changed["orders"] == {"#W5918442": order}
    assert changed["users"] == {} and changed["products"] == {}
    assert s.log[-1].touched == [("orders", "#W5918442")]


def test_cancel_gift_card_order_credits_the_card_at_once(tau2_world):
    s = user_of(tau2_world, DAIKI)
    order = run(s, "cancel_pending_order", order_id="#W8306539", reason="ordered by mistake")
    assert order["payment_history"][-1] == {
        "transaction_type": "refund",
        "amount": 154.17,
        "payment_method_id": "gift_card_9164233",
    }
    assert s.user(DAIKI).payment_methods["gift_card_9164233"].balance == 215.17
    assert set(s.changed()["users"]) == {DAIKI}
    assert s.log[-1].touched == [("orders", "#W8306539"), ("users", DAIKI)]


def test_cancel_after_payment_change_refunds_only_what_is_still_paid(tau2_world):
    s = user_of(tau2_world, OMAR)
    run(s, "modify_pending_order_payment", order_id="#W1080318", payment_method_id=OMAR_GC)
    assert s.user(OMAR).payment_methods[OMAR_GC].balance == 37.57
    order = run(s, "cancel_pending_order", order_id="#W1080318", reason="no longer needed")
    refunds = [p for p in order["payment_history"] if p["transaction_type"] == "refund"]
    assert sum(p["amount"] for p in refunds) == pytest.approx(2 * 53.43)  # the card once, the gift card once
    assert refunds[-1] == {"transaction_type": "refund", "amount": 53.43, "payment_method_id": OMAR_GC}
    assert s.user(OMAR).payment_methods[OMAR_GC].balance == 91.0


# ---- modify address / user address ---------------------------------------------------------
def test_modify_pending_order_address(tau2_world):
    s = user_of(tau2_world, SOFIA)
    order = run(s, "modify_pending_order_address", order_id="#W5918442", **NEW_ADDRESS)
    assert order["address"] == NEW_ADDRESS
    assert order["status"] == "pending"
    expected = base(tau2_world, "orders", "#W5918442") | {"address": NEW_ADDRESS}
    assert s.changed() == {"orders": {"#W5918442": expected}, "users": {}, "products": {}}


def test_modify_user_address(tau2_world):
    s = user_of(tau2_world, SOFIA)
    user = run(s, "modify_user_address", user_id=SOFIA, **NEW_ADDRESS)
    assert user["address"] == NEW_ADDRESS
    assert s.changed() == {
        "orders": {},
        "users": {SOFIA: base(tau2_world, "users", SOFIA) | {"address": NEW_ADDRESS}},
        "products": {},
    }
    # the orders keep their own shipping address
    assert s.order("#W5918442").address.address1 == "291 River Road"


# ---- modify payment -------------------------------------------------------------------------
def test_modify_payment_to_gift_card_debits_it(tau2_world):
    s = user_of(tau2_world, OMAR)
    order = run(s, "modify_pending_order_payment", order_id="#W1080318", payment_method_id=OMAR_GC)
    assert order["status"] == "pending"
    assert order["payment_history"] == [
        {"transaction_type": "payment", "amount": 53.43, "payment_method_id": OMAR_CC},
        {"transaction_type": "payment", "amount": 53.43, "payment_method_id": OMAR_GC},
        {"transaction_type": "refund", "amount": 53.43, "payment_method_id": OMAR_CC},
    ]
    assert s.user(OMAR).payment_methods[OMAR_GC].balance == 37.57
    # exactly one prior payment: a second change is refused
    refused(
        s,
        "modify_pending_order_payment",
        {"order_id": "#W1080318", "payment_method_id": OMAR_CC},
        "precondition",
        "exactly one payment",
    )


def test_modify_payment_from_gift_card_credits_it(tau2_world):
    s = user_of(tau2_world, ETHAN)
    order = run(s, "modify_pending_order_payment", order_id="#W6779827", payment_method_id=ETHAN_CC)
    assert order["payment_history"][1:] == [
        {"transaction_type": "payment", "amount": 4079.45, "payment_method_id": ETHAN_CC},
        {"transaction_type": "refund", "amount": 4079.45, "payment_method_id": ETHAN_GC},
    ]
    assert s.user(ETHAN).payment_methods[ETHAN_GC].balance == 4128.45


def test_modify_payment_refusals(tau2_world):
    s = user_of(tau2_world, OMAR)
    refused(
        s,
        "modify_pending_order_payment",
        {"order_id": "#W1080318", "payment_method_id": OMAR_CC},
        "precondition",
        "must differ",
    )
    refused(
        s,
        "modify_pending_order_payment",
        {"order_id": "#W1080318", "payment_method_id": AARAV_PP},
        "not_found",
        "payment method paypal_7859314 not found",
    )
    a = user_of(tau2_world, AARAV)
    refused(
        a,
        "modify_pending_order_payment",
        {"order_id": "#W2443586", "payment_method_id": AARAV_GC},
        "precondition",
        "insufficient gift card balance",
    )
    refused(
        a,
        "modify_pending_order_payment",
        {"order_id": "#W7728728", "payment_method_id": AARAV_GC},
        "precondition",
        "only pending orders",
    )


# ---- modify items ---------------------------------------------------------------------------
def test_modify_items_each_item_gets_its_own_variant_and_refund(tau2_world):
    s = user_of(tau2_world, LIAM)
    order = run(
        s,
        "modify_pending_order_items",
        order_id="#W7208030",
        item_ids=[HOSE, HOSE],
        new_item_ids=["8481719475", "9829827210"],
        payment_method_id=LIAM_CC,
    )
    assert order["status"] == "pending (item modified)"
    assert [(i["item_id"], i["price"], i["options"]) for i in order["items"]] == [
        ("8481719475", 98.61, {"length": "100ft", "material": "latex", "color": "blue"}),
        ("9829827210", 90.43, {"length": "25ft", "material": "vinyl", "color": "blue"}),
    ]
    last = order["payment_history"][-1]
    assert (last["transaction_type"], last["payment_method_id"]) == ("refund", LIAM_CC)
    assert last["amount"] == pytest.approx(2 * 96.35 - 98.61 - 90.43)
    assert s.changed()["users"] == {}  # a card holds no balance
    # once per order: a second modification, and any other change, is refused
    again = {
        "order_id": "#W7208030",
        "item_ids": ["8481719475"],
        "new_item_ids": ["4024196380"],
        "payment_method_id": LIAM_CC,
    }
    refused(s, "modify_pending_order_items", again, "precondition", "pending (item modified)")
    refused(
        s,
        "cancel_pending_order",
        {"order_id": "#W7208030", "reason": "no longer needed"},
        "precondition",
        "only pending orders",
    )
    refused(
        s,
        "modify_pending_order_address",
        {"order_id": "#W7208030", **NEW_ADDRESS},
        "precondition",
        "only pending orders",
    )


def test_modify_items_duplicate_ids_are_counted(tau2_world):
    s = user_of(tau2_world, LIAM)
    order = run(
        s,
        "modify_pending_order_items",
        order_id="#W7208030",
        item_ids=[HOSE],
        new_item_ids=["3369928769"],
        payment_method_id=LIAM_CC,
    )
    assert [i["item_id"] for i in order["items"]] == ["3369928769", HOSE]  # only one copy changed
    assert [i["price"] for i in order["items"]] == [97.35, 96.35]
    s2 = user_of(tau2_world, LIAM)
    refused(
        s2,
        "modify_pending_order_items",
        {
            "order_id": "#W7208030",
            "item_ids": [HOSE] * 3,
            "new_item_ids": ["3369928769"] * 3,
            "payment_method_id": LIAM_CC,
        },
        "not_found",
        "listed too often",
    )


def test_modify_items_across_products_with_gift_card_payment_and_refund(tau2_world):
    s = user_of(tau2_world, OMAR)
    order = run(
        s,
        "modify_pending_order_items",
        order_id="#W1080318",
        item_ids=["8349118980"],
        new_item_ids=["9354168549"],
        payment_method_id=OMAR_GC,
    )
    assert order["items"][0]["item_id"] == "9354168549" and order["items"][0]["price"] == 46.85
    assert order["payment_history"][-1]["amount"] == pytest.approx(6.58)
    assert order["payment_history"][-1]["transaction_type"] == "refund"
    assert s.user(OMAR).payment_methods[OMAR_GC].balance == 97.58

    s = user_of(tau2_world, OMAR)
    order = run(
        s,
        "modify_pending_order_items",
        order_id="#W1080318",
        item_ids=["8349118980"],
        new_item_ids=["9647292434"],
        payment_method_id=OMAR_GC,
    )
    assert order["payment_history"][-1]["transaction_type"] == "payment"
    assert order["payment_history"][-1]["amount"] == pytest.approx(0.05)
    assert s.user(OMAR).payment_methods[OMAR_GC].balance == 90.95


def test_modify_items_price_difference_paid_by_paypal(tau2_world):
    s = user_of(tau2_world, AARAV)
    order = run(
        s,
        "modify_pending_order_items",
        order_id="#W2443586",
        item_ids=["9690244451", "1437889264"],
        new_item_ids=["1151293680", "8277474082"],
        payment_method_id=AARAV_PP,
    )
    assert [i["item_id"] for i in order["items"]] == ["1151293680", "8277474082", "3369928769"]
    assert [i["price"] for i in order["items"]] == [272.33, 236.57, 97.35]
    last = order["payment_history"][-1]
    assert (last["transaction_type"], last["payment_method_id"]) == ("payment", AARAV_PP)
    assert last["amount"] == pytest.approx((272.33 - 236.51) + (236.57 - 258.09))


@pytest.mark.parametrize(
    ("arguments", "category", "fragment"),
    [
        (
            {"item_ids": ["9690244451"], "new_item_ids": ["1151293680"], "payment_method_id": AARAV_GC},
            "precondition",
            "insufficient gift card balance",
        ),
        (
            {"item_ids": ["9690244451"], "new_item_ids": ["4648814700"], "payment_method_id": AARAV_PP},
            "precondition",
            "not available",
        ),
        (
            {"item_ids": ["9690244451"], "new_item_ids": ["9647292434"], "payment_method_id": AARAV_PP},
            "not_found",
            "not a variant of product 1656367028",
        ),
        (
            {"item_ids": ["9690244451"], "new_item_ids": ["9690244451"], "payment_method_id": AARAV_PP},
            "precondition",
            "not available",
        ),  # the old variant itself is no longer sold
        (
            {"item_ids": ["3369928769"], "new_item_ids": ["3369928769"], "payment_method_id": AARAV_PP},
            "invalid_arguments",
            "same as the old item",
        ),
        (
            {"item_ids": ["1111111111"], "new_item_ids": ["1151293680"], "payment_method_id": AARAV_PP},
            "not_found",
            "item 1111111111 not found",
        ),
        (
            {"item_ids": ["9690244451"], "new_item_ids": [], "payment_method_id": AARAV_PP},
            "invalid_arguments",
            "same length",
        ),
        ({"item_ids": [], "new_item_ids": [], "payment_method_id": AARAV_PP}, "invalid_arguments", "no items"),
        (
            {"item_ids": ["9690244451"], "new_item_ids": ["1151293680"], "payment_method_id": OMAR_GC},
            "not_found",
            "payment method gift_card_3749819 not found",
        ),
    ],
)
def test_modify_items_refusals(tau2_world, arguments, category, fragment):
    refused(
        user_of(tau2_world, AARAV),
        "modify_pending_order_items",
        {"order_id": "#W2443586", **arguments},
        category,
        fragment,
    )


# ---- return / exchange ----------------------------------------------------------------------
@pytest.mark.parametrize("method", [OLIVIA_PP, OLIVIA_GC])
def test_return_to_original_method_or_gift_card(tau2_world, method):
    s = user_of(tau2_world, OLIVIA)
    order = run(
        s,
        "return_delivered_order_items",
        order_id="#W5866402",
        item_ids=["9727387530", "6242772310"],
        payment_method_id=method,
    )
    assert order["status"] == "return requested"
    assert order["return_items"] == ["6242772310", "9727387530"]
    assert order["return_payment_method_id"] == method
    assert order["payment_history"] == base(tau2_world, "orders", "#W5866402")["payment_history"]
    assert s.changed()["users"] == {}  # nothing is refunded before the items come back


def test_return_refusals(tau2_world):
    s = user_of(tau2_world, OLIVIA)
    ret = {"order_id": "#W5866402", "item_ids": ["9727387530"]}
    refused(
        s,
        "return_delivered_order_items",
        {**ret, "payment_method_id": OLIVIA_CC},
        "precondition",
        "original payment method or a gift card",
    )
    refused(
        s,
        "return_delivered_order_items",
        {**ret, "item_ids": ["9727387530", "9727387530"], "payment_method_id": OLIVIA_PP},
        "not_found",
        "9727387530",
    )
    refused(
        s,
        "return_delivered_order_items",
        {**ret, "item_ids": [], "payment_method_id": OLIVIA_PP},
        "invalid_arguments",
        "no items",
    )
    refused(
        user_of(tau2_world, SOFIA),
        "return_delivered_order_items",
        {"order_id": "#W5918442", "item_ids": ["1725100896"], "payment_method_id": SOFIA_CC},
        "precondition",
        "only delivered orders",
    )
    run(s, "return_delivered_order_items", **ret, payment_method_id=OLIVIA_PP)
    refused(
        s, "return_delivered_order_items", {**ret, "payment_method_id": OLIVIA_PP}, "precondition", "return requested"
    )
    refused(
        s,
        "exchange_delivered_order_items",
        {**ret, "new_item_ids": ["2509076505"], "payment_method_id": OLIVIA_PP},
        "precondition",
        "return requested",
    )


def test_exchange_sorts_lists_and_records_price_difference(tau2_world):
    s = user_of(tau2_world, OLIVIA)
    order = run(
        s,
        "exchange_delivered_order_items",
        order_id="#W5866402",
        item_ids=["6242772310", "9727387530"],
        new_item_ids=["3714494375", "2509076505"],
        payment_method_id=OLIVIA_GC,
    )
    assert order["status"] == "exchange requested"
    assert order["exchange_items"] == ["6242772310", "9727387530"]
    assert order["exchange_new_items"] == ["2509076505", "3714494375"]
    assert order["exchange_payment_method_id"] == OLIVIA_GC
    assert order["exchange_price_difference"] == pytest.approx((2709.83 - 2996.03) + (189.5 - 207.75))
    assert order["items"] == base(tau2_world, "orders", "#W5866402")["items"]  # items change on arrival
    assert s.changed()["users"] == {}


def test_exchange_gift_card_paying_the_difference(tau2_world):
    s = user_of(tau2_world, MOHAMED)
    order = run(
        s,
        "exchange_delivered_order_items",
        order_id="#W7808613",
        item_ids=["9811090008"],
        new_item_ids=["1007724142"],
        payment_method_id=MOHAMED_GC,
    )
    assert order["exchange_price_difference"] == pytest.approx(12.03)
    refused(
        user_of(tau2_world, OLIVIA),
        "exchange_delivered_order_items",
        {
            "order_id": "#W5866402",
            "item_ids": ["6242772310"],
            "new_item_ids": ["3951031513"],
            "payment_method_id": OLIVIA_GC,
        },
        "precondition",
        "insufficient gift card balance",
    )
    refused(
        s,
        "exchange_delivered_order_items",
        {
            "order_id": "#W7808613",
            "item_ids": ["9811090008"],
            "new_item_ids": ["4920090458"],
            "payment_method_id": MOHAMED_GC,
        },
        "precondition",
        "exchange requested",
    )
    refused(
        user_of(tau2_world, MOHAMED),
        "exchange_delivered_order_items",
        {
            "order_id": "#W7808613",
            "item_ids": ["9811090008"],
            "new_item_ids": ["4920090458"],
            "payment_method_id": MOHAMED_GC,
        },
        "precondition",
        "not available",
    )


# ---- status and reason preconditions ---------------------------------------------------------
def test_cancel_refusals(tau2_world):
    s = user_of(tau2_world, SOFIA)
    refused(
        s,
        "cancel_pending_order",
        {"order_id": "#W5918442", "reason": "changed my mind"},
        "precondition",
        "invalid cancel reason",
    )
    refused(
        s,
        "cancel_pending_order",
        {"order_id": "#W8535951", "reason": "no longer needed"},
        "precondition",
        "only pending orders",
    )
    refused(
        s,
        "modify_pending_order_address",
        {"order_id": "#W8535951", **NEW_ADDRESS},
        "precondition",
        "only pending orders",
    )
    refused(
        s,
        "cancel_pending_order",
        {"order_id": "#W0000000", "reason": "no longer needed"},
        "not_found",
        "#W0000000 not found",
    )
    run(s, "cancel_pending_order", order_id="#W5918442", reason="no longer needed")
    refused(
        s, "cancel_pending_order", {"order_id": "#W5918442", "reason": "no longer needed"}, "precondition", "cancelled"
    )


# ---- malformed calls ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [
        ("delete_everything", {}, "unknown tool 'delete_everything'"),
        ("cancel_pending_order", None, "must be a JSON object"),
        ("cancel_pending_order", ["#W5918442", "no longer needed"], "must be a JSON object"),
        ("cancel_pending_order", '{"order_id": "#W5918442"}', "must be a JSON object"),
        ("cancel_pending_order", {"order_id": 5918442, "reason": "no longer needed"}, "order_id"),
        ("cancel_pending_order", {"order_id": "#W5918442"}, "reason: Field required"),
        ("cancel_pending_order", {"order_id": "#W5918442", "reason": "no longer needed", "force": True}, "force"),
        (
            "modify_pending_order_items",
            {"order_id": "#W5918442", "item_ids": "1725100896", "new_item_ids": ["1"], "payment_method_id": SOFIA_CC},
            "item_ids",
        ),
        ("get_user_details", {"user_id": None}, "user_id"),
        ("list_all_product_types", {"anything": 1}, "anything"),
        ("calculate", {"expression": 2}, "expression"),
    ],
)
def test_malformed_calls_are_invalid_arguments_and_change_nothing(tau2_world, name, arguments, fragment):
    s = user_of(tau2_world, SOFIA)
    event = refused(s, name, arguments, "invalid_arguments", fragment)
    assert event.name == name


# ---- atomicity --------------------------------------------------------------------------------
@pytest.mark.parametrize("failure", [RuntimeError("disk on fire"), tools.ToolError("late refusal")])
def test_a_tool_failing_midway_is_rolled_back(tau2_world, monkeypatch, failure):
    s = user_of(tau2_world, DAIKI)
    run(s, "modify_pending_order_address", order_id="#W8306539", **NEW_ADDRESS)  # already in the overlay
    before = snapshot(s)
    order_before = s.order("#W8306539")

    def boom(*args, **kwargs):
        raise failure

    monkeypatch.setattr(tools, "_credit", boom)  # the order is already edited when the refund is credited
    event = execute(s, "cancel_pending_order", {"order_id": "#W8306539", "reason": "no longer needed"})
    assert not event.ok
    assert event.error_category == ("internal" if isinstance(failure, RuntimeError) else "precondition")
    assert str(failure) in event.error
    assert snapshot(s) == before
    assert s.order("#W8306539") is order_before  # the earlier overlay copy, not a half-edited one
    assert s.order("#W8306539").status == "pending" and s.order("#W8306539").address.zip == "62701"
    monkeypatch.undo()
    run(s, "cancel_pending_order", order_id="#W8306539", reason="no longer needed")  # the session still works
    assert s.user(DAIKI).payment_methods["gift_card_9164233"].balance == 215.17


def test_rollback_of_a_first_edit_removes_it_from_the_overlay(tau2_world, monkeypatch):
    s = user_of(tau2_world, OMAR)
    monkeypatch.setattr(tools, "_credit", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("x")))
    event = execute(s, "modify_pending_order_payment", {"order_id": "#W1080318", "payment_method_id": OMAR_GC})
    assert not event.ok
    assert all(not records for records in s.overlay.values())
    assert s.order("#W1080318") is tau2_world.db.orders["#W1080318"]


def test_a_write_breaking_an_invariant_is_refused_whatever_the_tool_checked(tau2_world, monkeypatch):
    """`execute` keeps the domain's invariants on every write: a tool that let a gift card go negative is undone."""
    s = user_of(tau2_world, OMAR)
    real_credit = tools._credit
    monkeypatch.setattr(tools, "_credit", lambda s, uid, pid, amount: real_credit(s, uid, pid, amount - 1000))
    event = refused(
        s,
        "modify_pending_order_payment",
        {"order_id": "#W1080318", "payment_method_id": OMAR_GC},
        "precondition",
        "'gift_card_balance'",
    )
    assert "is negative" in event.error
    monkeypatch.undo()
    run(s, "modify_pending_order_address", order_id="#W1080318", **NEW_ADDRESS)  # an invariant-keeping write runs
