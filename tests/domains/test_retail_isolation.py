"""Per-episode isolation: writes stay in their session, the base world never changes, sessions start free."""

from __future__ import annotations

import time

import pytest

from pipeline.digest import sha256_json
from pipeline.domains.retail.tools import execute
from pipeline.domains.retail.worlds import world_from_dict

SOFIA, SOFIA_ORDER = "sofia_rossi_8776", "#W5918442"  # pending, paid by credit card
DAIKI, DAIKI_ORDER, DAIKI_GC = "daiki_jackson_4362", "#W8306539", "gift_card_9164233"  # paid by gift card (61.0)
ADDRESS = {"address1": "9 Elm", "address2": "", "city": "Reno", "state": "NV", "country": "USA", "zip": "89501"}


def ok(session, name, **arguments):
    event = execute(session, name, arguments)
    assert event.ok, event.error
    return event


def test_two_sessions_do_not_see_each_others_writes(tau2_world):
    a = tau2_world.session(authenticated_user_id=SOFIA)
    b = tau2_world.session(authenticated_user_id=SOFIA)
    empty_hash = b.state_hash()
    ok(a, "cancel_pending_order", order_id=SOFIA_ORDER, reason="no longer needed")
    assert a.order(SOFIA_ORDER).status == "cancelled"
    assert b.order(SOFIA_ORDER).status == "pending"
    assert b.changed() == {"orders": {}, "users": {}, "products": {}}
    assert b.state_hash() == empty_hash != a.state_hash()
    # b can make its own, different write to the same record
    ok(b, "modify_pending_order_address", order_id=SOFIA_ORDER, **ADDRESS)
    assert a.order(SOFIA_ORDER).address.city == "Austin"
    assert b.order(SOFIA_ORDER).status == "pending"


def test_same_writes_give_same_hash_and_reads_do_not_change_it(tau2_world):
    a, b = (tau2_world.session(authenticated_user_id=DAIKI) for _ in range(2))
    for s in (a, b):
        ok(s, "get_order_details", order_id=DAIKI_ORDER)
        ok(s, "cancel_pending_order", order_id=DAIKI_ORDER, reason="ordered by mistake")
    assert a.changed() == b.changed()
    assert a.state_hash() == b.state_hash()
    c = tau2_world.session(authenticated_user_id=DAIKI)
    ok(c, "get_user_details", user_id=DAIKI)
    ok(c, "get_order_details", order_id=DAIKI_ORDER)
    assert c.state_hash() == tau2_world.session().state_hash()


def test_undoing_a_change_leaves_no_difference(tau2_world):
    s = tau2_world.session(authenticated_user_id=SOFIA)
    original = tau2_world.db.users[SOFIA].address.model_dump()
    ok(s, "modify_user_address", user_id=SOFIA, **ADDRESS)
    assert set(s.changed()["users"]) == {SOFIA}
    ok(s, "modify_user_address", user_id=SOFIA, **original)
    assert s.changed()["users"] == {}  # back to the base record: no difference, the same hash as no write
    assert s.state_hash() == tau2_world.session().state_hash()


def test_base_world_unchanged_after_many_writes(tau2_world):
    dump_before = tau2_world.to_dict()
    fingerprint = tau2_world.fingerprint
    base_order = tau2_world.db.orders[DAIKI_ORDER]
    for _ in range(20):
        s = tau2_world.session(authenticated_user_id=DAIKI)
        ok(s, "modify_pending_order_address", order_id=DAIKI_ORDER, **ADDRESS)
        ok(s, "modify_user_address", user_id=DAIKI, **ADDRESS)
        ok(s, "cancel_pending_order", order_id=DAIKI_ORDER, reason="no longer needed")
        assert s.user(DAIKI).payment_methods[DAIKI_GC].balance == 215.17  # credited once per episode
    assert tau2_world.db.orders[DAIKI_ORDER] is base_order
    assert base_order.status == "pending"
    assert tau2_world.db.users[DAIKI].payment_methods[DAIKI_GC].balance == 61.0
    assert tau2_world.to_dict() == dump_before
    assert sha256_json(tau2_world.to_dict()) == fingerprint  # recomputed, not the cached value


def test_records_read_from_a_session_are_the_base_objects_until_edited(tau2_world):
    s = tau2_world.session(authenticated_user_id=SOFIA)
    assert s.order(SOFIA_ORDER) is tau2_world.db.orders[SOFIA_ORDER]
    ok(s, "modify_pending_order_address", order_id=SOFIA_ORDER, **ADDRESS)
    assert s.order(SOFIA_ORDER) is not tau2_world.db.orders[SOFIA_ORDER]
    assert s.overlay["orders"].keys() == {SOFIA_ORDER}
    assert all(not s.overlay[t] for t in ("users", "products"))


def test_session_creation_copies_nothing_and_is_cheap(tau2_world):
    s = tau2_world.session()
    assert s.world is tau2_world
    assert s.overlay == {"products": {}, "users": {}, "orders": {}}
    assert s.log == [] and s.authenticated_user_id is None and s.transferred is False

    def best_of(n, fn):
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    one_dump = best_of(3, tau2_world.to_dict)
    thousand_sessions = best_of(3, lambda: [tau2_world.session() for _ in range(1000)])
    # 1000 episode starts must cost well under one copy of the database (measured: about 0.07 of one dump)
    assert thousand_sessions < 0.5 * one_dump, (thousand_sessions, one_dump)


def test_query_by_predicate_and_by_dotted_filter(tau2_world):
    pending = tau2_world.query("orders", {"status": "pending"})
    assert len(pending) == 423
    assert [o.order_id for o in pending] == sorted(o.order_id for o in pending)
    sofias = tau2_world.query("orders", {"user_id": SOFIA, "status": "pending"})
    assert {o.order_id for o in sofias} == {"#W5918442", "#W5500815", "#W2818151"}
    in_austin = tau2_world.query("users", {"address.city": "Austin", "name.first_name": "Sofia"})
    assert SOFIA in {u.user_id for u in in_austin}
    assert all(u.address.city == "Austin" for u in in_austin)
    gift = tau2_world.query("users", lambda u: any(m.source == "gift_card" for m in u.payment_methods.values()))
    assert DAIKI in {u.user_id for u in gift} and SOFIA not in {u.user_id for u in gift}
    assert len(tau2_world.query("products")) == 50
    assert tau2_world.query("orders", {"status": "no such status"}) == []
    with pytest.raises(KeyError, match="unknown table"):
        tau2_world.query("customers")
    with pytest.raises(KeyError, match="table 'orders' has no field 'no_such_field'; its fields are order_id"):
        tau2_world.query("orders", {"no_such_field": None})  # not every order, as a missing field read as None was


def test_query_sees_the_base_world_not_sessions(tau2_world):
    s = tau2_world.session(authenticated_user_id=SOFIA)
    ok(s, "cancel_pending_order", order_id=SOFIA_ORDER, reason="no longer needed")
    assert SOFIA_ORDER in {o.order_id for o in tau2_world.query("orders", {"status": "pending"})}


def test_from_dict_round_trip_gives_an_equal_world(tau2_world):
    copy = world_from_dict(tau2_world.to_dict(), name="copy")
    assert copy.fingerprint == tau2_world.fingerprint
    assert copy.session().state_hash() == tau2_world.session().state_hash()
