"""The seeded world generator: deterministic, schema-valid, internally consistent, and fresh w.r.t. τ²-bench."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter

import pytest
from pydantic import ValidationError

from pipeline.domains.retail.generator import GeneratorConfig
from pipeline.domains.retail.schema import CANCEL_REASONS, ORDER_STATUSES, RetailDB
from pipeline.domains.retail.state import RetailWorld
from pipeline.domains.retail.tools import execute
from pipeline.domains.retail.worlds import generate_world, world_from_dict, world_from_json
from pipeline.errors import InputError

SHIPPED = {"processed", "delivered", "return requested", "exchange requested"}


@pytest.fixture(scope="module")
def world() -> RetailWorld:
    return generate_world()


@pytest.fixture(scope="module")
def small() -> RetailWorld:
    return generate_world(seed=7, n_products=5, n_users=20, n_orders=40)


# ---- determinism ---------------------------------------------------------------------------------
def test_same_seed_same_world_and_different_seeds_differ(world):
    again = generate_world(GeneratorConfig())
    assert again.fingerprint == world.fingerprint
    assert again.to_dict() == world.to_dict()
    other = generate_world(seed=1)
    assert other.fingerprint != world.fingerprint
    assert other.db.orders.keys() != world.db.orders.keys()


def test_same_world_under_another_hash_seed(world):
    """No set/dict-order dependence: a fresh interpreter with another PYTHONHASHSEED builds the same world."""
    code = "from pipeline.domains.retail.worlds import generate_world; print(generate_world().fingerprint)"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == world.fingerprint


def test_global_random_untouched():
    random.seed(99)
    state = random.getstate()
    generate_world(n_products=3, n_users=5, n_orders=10)
    assert random.getstate() == state


def test_config_name_and_overrides():
    cfg = GeneratorConfig(seed=3, n_products=4, n_users=6, n_orders=9)
    w = generate_world(cfg)
    assert w.name == "gen-3-4x6x9"  # size in the name: never confused with the default-size gen-3
    assert generate_world(seed=3, n_products=2, n_users=3, n_orders=4, name=None).name == "gen-3-2x3x4"
    assert (len(w.db.products), len(w.db.users), len(w.db.orders)) == (4, 6, 9)
    assert generate_world(cfg, name="mine").name == "mine"
    overridden = generate_world(cfg, seed=4)
    assert overridden.name == "gen-4-4x6x9" and overridden.fingerprint != w.fingerprint
    with pytest.raises(ValidationError):
        generate_world(cfg, n_items=3)
    with pytest.raises(ValidationError):
        GeneratorConfig(n_users=0)


def test_default_size_is_fast():
    started = time.perf_counter()
    generate_world(seed=11)
    assert time.perf_counter() - started < 2.0


# ---- schema --------------------------------------------------------------------------------------
def test_round_trips_through_json(world, tmp_path):
    data = world.to_dict()
    RetailDB.model_validate(data)
    assert world_from_dict(data).fingerprint == world.fingerprint
    path = tmp_path / "db.json"
    path.write_text(json.dumps(data))
    assert world_from_json(path).fingerprint == world.fingerprint


def test_id_formats(world):
    db = world.db
    for pid, product in db.products.items():
        assert re.fullmatch(r"\d{10}", pid) and product.product_id == pid
        for item_id, variant in product.variants.items():
            assert re.fullmatch(r"\d{10}", item_id) and variant.item_id == item_id
    for uid, user in db.users.items():
        first, last = user.name.first_name.lower(), user.name.last_name.lower()
        assert re.fullmatch(rf"{first}_{last}_\d{{4}}", uid) and user.user_id == uid
        assert re.fullmatch(rf"{first}\.{last}\d{{4}}@example\.com", user.email)
        for mid, method in user.payment_methods.items():
            assert method.id == mid and re.fullmatch(rf"{method.source}_\d{{7}}", mid)
            is_card, is_gift = method.source == "credit_card", method.source == "gift_card"
            assert (method.brand is not None) == is_card and (method.last_four is not None) == is_card
            assert method.last_four is None or re.fullmatch(r"\d{4}", method.last_four)
            assert (method.balance is not None) == is_gift and (method.balance or 0) >= 0
    for oid, order in db.orders.items():
        assert re.fullmatch(r"#W\d{7}", oid) and order.order_id == oid
        for f in order.fulfillments:
            assert all(re.fullmatch(r"\d{12}", t) for t in f.tracking_id)


# ---- coverage at the default size ----------------------------------------------------------------
def test_default_size_covers_every_case(world):
    db = world.db
    assert (len(db.products), len(db.users), len(db.orders)) == (50, 500, 1000)
    assert set(Counter(o.status for o in db.orders.values())) == set(ORDER_STATUSES)
    assert {m.source for u in db.users.values() for m in u.payment_methods.values()} == {
        "credit_card",
        "paypal",
        "gift_card",
    }
    methods = {mid: m.source for u in db.users.values() for mid, m in u.payment_methods.items()}
    assert {methods[o.payment_history[0].payment_method_id] for o in db.orders.values()} == set(methods.values())
    assert any(not v.available for p in db.products.values() for v in p.variants.values())
    assert sum(len(u.orders) >= 2 for u in db.users.values()) > 50
    assert any(not u.orders for u in db.users.values())
    names = Counter((u.name.first_name, u.name.last_name) for u in db.users.values())
    assert any(n >= 2 for n in names.values()), "some customers share a name (then name + zip tells them apart)"
    assert len(world.user_by_name_zip) == len(db.users)
    assert len(world.user_by_email) == len(db.users)
    modified = [o for o in db.orders.values() if o.status == "pending (item modified)"]
    assert any(len(o.payment_history) == 2 for o in modified)
    assert any(u.address.address2 == "" for u in db.users.values())


# ---- internal consistency ------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["world", "small"])
def test_internally_consistent(which, request):
    w = request.getfixturevalue(which)
    db = w.db
    assert len({p.name for p in db.products.values()}) == len(db.products), "product names are unique"
    item_ids = [i for p in db.products.values() for i in p.variants]
    assert len(set(item_ids)) == len(item_ids) and set(item_ids).isdisjoint(db.products)
    for product in db.products.values():
        assert sum(v.available for v in product.variants.values()) >= min(2, len(product.variants))

    listed = Counter(oid for u in db.users.values() for oid in u.orders)
    assert listed == Counter({oid: 1 for oid in db.orders})
    for user in db.users.values():
        assert all(db.orders[oid].user_id == user.user_id for oid in user.orders)

    def variant(item_id: str):
        return db.products[w.product_by_item[item_id]].variants[item_id]

    for order in db.orders.values():
        user = db.users[order.user_id]
        for item in order.items:
            product = db.products[item.product_id]
            stocked = variant(item.item_id)
            assert (item.name, item.price, item.options) == (product.name, stocked.price, stocked.options)
            assert w.product_by_item[item.item_id] == item.product_id
        assert all(t.payment_method_id in user.payment_methods for t in order.payment_history)
        assert order.payment_history[0].transaction_type == "payment"
        net = sum(t.amount if t.transaction_type == "payment" else -t.amount for t in order.payment_history)
        total = sum(i.price for i in order.items)
        assert net == pytest.approx(0.0 if order.status == "cancelled" else total, abs=0.005)

        assert bool(order.fulfillments) == (order.status in SHIPPED)
        for f in order.fulfillments:
            assert f.item_ids == [i.item_id for i in order.items] and len(f.tracking_id) == 1
        assert (order.cancel_reason is not None) == (order.status == "cancelled")
        if order.status == "cancelled":
            assert order.cancel_reason in CANCEL_REASONS
            assert [t.transaction_type for t in order.payment_history] == ["payment", "refund"]
        elif order.status == "pending (item modified)":
            assert len(order.payment_history) in (1, 2)
        else:
            assert len(order.payment_history) == 1

        returning = order.status == "return requested"
        assert (order.return_items is not None) == returning == (order.return_payment_method_id is not None)
        if returning:
            assert not Counter(order.return_items) - Counter(i.item_id for i in order.items)
            refund_to = user.payment_methods[order.return_payment_method_id]
            assert refund_to.source == "gift_card" or refund_to.id == order.payment_history[0].payment_method_id

        exchanging = order.status == "exchange requested"
        assert (order.exchange_items is not None) == exchanging == (order.exchange_new_items is not None)
        assert (order.exchange_price_difference is not None) == exchanging
        if exchanging:
            old, new = order.exchange_items, order.exchange_new_items
            assert order.exchange_payment_method_id in user.payment_methods
            assert order.exchange_items == sorted(old) and len(old) == len(new)
            assert not Counter(old) - Counter(i.item_id for i in order.items)
            assert Counter(w.product_by_item[i] for i in old) == Counter(w.product_by_item[i] for i in new)
            assert all(variant(i).available for i in new) and not set(old) & set(new)
            diff = sum(variant(i).price for i in new) - sum(variant(i).price for i in old)
            assert order.exchange_price_difference == pytest.approx(diff, abs=0.005)


@pytest.mark.parametrize(
    ("n_products", "n_users", "n_orders"), [(1, 1, 0), (1, 1, 1), (2, 3, 6), (5, 20, 40), (75, 10, 7), (3, 2, 30)]
)
def test_small_and_odd_sizes(n_products, n_users, n_orders):
    w = generate_world(seed=5, n_products=n_products, n_users=n_users, n_orders=n_orders)
    assert (len(w.db.products), len(w.db.users), len(w.db.orders)) == (n_products, n_users, n_orders)
    sources = {m.source for u in w.db.users.values() for m in u.payment_methods.values()}
    assert sources == {"credit_card", "paypal", "gift_card"}
    if n_orders >= len(ORDER_STATUSES):
        assert {o.status for o in w.db.orders.values()} == set(ORDER_STATUSES)


def test_too_many_products_is_a_clear_error():
    with pytest.raises(InputError, match="n_products"):
        generate_world(n_products=100_000, n_users=1, n_orders=0)


# ---- the tools work on a generated world ---------------------------------------------------------
def test_tools_on_generated_world(world):
    db = world.db
    order = next(o for o in db.orders.values() if o.status == "pending")
    user = db.users[order.user_id]
    s = world.session()
    assert execute(s, "find_user_id_by_email", {"email": user.email.upper()}).result == user.user_id
    details = json.loads(execute(s, "get_user_details", {"user_id": user.user_id}).result)
    assert order.order_id in details["orders"]
    assert json.loads(execute(s, "get_order_details", {"order_id": order.order_id}).result)["status"] == "pending"
    item = order.items[0]
    product = json.loads(execute(s, "get_product_details", {"product_id": item.product_id}).result)
    assert item.item_id in product["variants"]
    assert json.loads(execute(s, "get_item_details", {"item_id": item.item_id}).result)["price"] == item.price
    assert len(json.loads(execute(s, "list_all_product_types", {}).result)) == len(db.products)

    event = execute(s, "cancel_pending_order", {"order_id": order.order_id, "reason": "no longer needed"})
    assert event.ok, event.error
    cancelled = s.order(order.order_id)
    assert cancelled.status == "cancelled" and cancelled.payment_history[-1].transaction_type == "refund"
    assert db.orders[order.order_id].status == "pending", "the base world is untouched"

    other = next(o for o in db.orders.values() if o.user_id != user.user_id and o.status == "pending")
    refused = execute(s, "cancel_pending_order", {"order_id": other.order_id, "reason": "no longer needed"})
    assert not refused.ok and refused.error_category == "unauthorized"

    by_zip = world.session()
    found = execute(
        by_zip,
        "find_user_id_by_name_zip",
        {"first_name": user.name.first_name, "last_name": user.name.last_name, "zip": user.address.zip},
    )
    assert found.result == user.user_id


def test_every_order_accepts_the_write_its_status_allows(small):
    """Each pending order can be cancelled and item-modified, each delivered one returned and exchanged;
    orders in any other status refuse a cancellation."""
    db = small.db
    for order in db.orders.values():
        paid_with = order.payment_history[0].payment_method_id
        item = order.items[0]
        variants = db.products[item.product_id].variants
        new_id = next(i for i, v in variants.items() if v.available and i != item.item_id)
        # a gift card must cover a price increase; the original method is always allowed otherwise
        method = db.users[order.user_id].payment_methods[paid_with]
        covered = method.source != "gift_card" or (method.balance or 0) >= variants[new_id].price - item.price
        swap = {"item_ids": [item.item_id], "new_item_ids": [new_id], "payment_method_id": paid_with}
        cancel = {"reason": "ordered by mistake"}
        back = {"item_ids": [item.item_id], "payment_method_id": paid_with}
        if order.status == "pending":
            calls = [("cancel_pending_order", cancel, True), ("modify_pending_order_items", swap, covered)]
        elif order.status == "delivered":
            calls = [
                ("return_delivered_order_items", back, True),
                ("exchange_delivered_order_items", swap, covered),
            ]
        else:
            calls = [("cancel_pending_order", cancel, False)]
        for name, args, should_pass in calls:
            s = small.session(authenticated_user_id=order.user_id)
            event = execute(s, name, {"order_id": order.order_id, **args})
            assert event.ok == should_pass, (order.order_id, order.status, name, event.error)
            assert event.ok or event.error_category == "precondition"


# ---- freshness w.r.t. the evaluation world -------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_entity_shared_with_tau2(seed, tau2_world):
    w = generate_world(seed=seed)
    assert set(w.db.users).isdisjoint(tau2_world.db.users)
    assert set(w.user_by_email).isdisjoint(tau2_world.user_by_email)
    assert set(w.db.orders).isdisjoint(tau2_world.db.orders)
    gen_methods = {m for u in w.db.users.values() for m in u.payment_methods}
    tau_methods = {m for u in tau2_world.db.users.values() for m in u.payment_methods}
    assert gen_methods.isdisjoint(tau_methods)
