"""After a successful transfer to a human agent no write reaches the world, in either domain."""

from __future__ import annotations

import copy

from pipeline.world.tools import TRANSFERRED, execute

SOFIA, SOFIA_ORDER = "sofia_rossi_8776", "#W5918442"  # a pending order of a τ²-bench retail customer
CANCEL = {"order_id": SOFIA_ORDER, "reason": "no longer needed"}


def test_a_write_after_a_transfer_is_refused_and_changes_nothing(tau2_world):
    s = tau2_world.session(authenticated_user_id=SOFIA)
    assert execute(s, "transfer_to_human_agents", {"summary": "wants a human"}).ok
    before = (s.state_hash(), copy.deepcopy(s.changed()))
    event = execute(s, "cancel_pending_order", CANCEL)
    assert not event.ok and event.error_category == TRANSFERRED
    assert "transferred to a human agent" in event.error and event.touched == []
    assert (s.state_hash(), s.changed()) == before
    assert execute(s, "get_order_details", {"order_id": SOFIA_ORDER}).ok  # reads stay allowed


def test_the_same_write_before_the_transfer_succeeds(tau2_world):
    s = tau2_world.session(authenticated_user_id=SOFIA)
    assert execute(s, "cancel_pending_order", CANCEL).ok
    assert execute(s, "transfer_to_human_agents", {"summary": "done"}).ok and s.transferred


def test_a_refused_transfer_does_not_lock_the_session(tau2_world):
    s = tau2_world.session(authenticated_user_id=SOFIA)
    assert not execute(s, "transfer_to_human_agents", {"summary": 3}).ok  # bad arguments: no transfer happened
    assert not s.transferred
    assert execute(s, "cancel_pending_order", CANCEL).ok


def test_airline_writes_after_a_transfer_are_refused(tau2_airline_dir):
    from pipeline.world.registry import resolve_domain

    world, tasks = resolve_domain("airline").require("tau2_importer").load(tau2_airline_dir)
    writes = world.tools.of_kind("write")
    task = next(t for t in tasks if any(a.name in writes for a in t.gold_actions))
    s = world.session(authenticated_user_id=task.customer_user_id)
    assert execute(s, "transfer_to_human_agents", {"summary": "wants a human"}).ok
    events = [execute(s, a.name, a.arguments) for a in task.gold_actions]
    refused = [e for e in events if e.kind == "write"]
    assert refused and all(not e.ok and e.error_category == TRANSFERRED for e in refused)
    assert not any(s.changed().values())
