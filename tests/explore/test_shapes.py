"""Structured arguments: lists and objects formed from the records a call names, amounts set as a refusal says."""

from __future__ import annotations

from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.replay import replay_gold
from pipeline.explore.probe import world_model
from pipeline.explore.repair import numbers, repairs
from pipeline.explore.shapes import singulars
from pipeline.grading.grader import grade
from pipeline.rollout.runner import run_episode
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world

ITEMS = ("exchange_delivered_order_items", "modify_pending_order_items")


def test_numbers_of_a_message_leave_ids_and_dates_alone():
    text = "not enough balance on gift_card_7219486 (100.0) for 1200 on 2024-05-20; total 35.5."
    assert numbers(text) == [100.0, 1200.0, 35.5]
    assert singulars("item_ids") == ["item_id"] and "passenger" in singulars("passengers")


def test_amounts_are_set_to_the_number_the_refusal_names_beside_the_calls_own():
    one = {"user_id": "u", "payment_methods": [{"payment_id": "c1", "amount": 100}], "bags": 2}
    fixed = repairs(one, "payments add up to 100, but the total price is 350")
    assert fixed[0]["payment_methods"] == [{"payment_id": "c1", "amount": 350}] and fixed[0]["bags"] == 2
    two = {"payment_methods": [{"payment_id": "a", "amount": 100}, {"payment_id": "b", "amount": 50}]}
    options = repairs(two, "payments add up to 150, but the total price is 400")
    assert {"payment_methods": [{"payment_id": "a", "amount": 350}, {"payment_id": "b", "amount": 50}]} in options
    assert {"payment_methods": [{"payment_id": "a", "amount": 400}]} in options
    assert repairs(one, "a reservation has 1 to 5 passengers, not 7") == []  # no number of the call quoted
    assert repairs(one, "checked bags can be added but not removed") == []


def test_item_lists_come_from_the_order_and_new_items_from_the_same_products():
    world = load_world("gen-0", "retail+generic")
    model = world_model(world)
    assert not model.unexplored and all(model.writes[t].ok for t in ITEMS)
    args = model.tools["exchange_delivered_order_items"].args
    assert (args["item_ids"].binds, args["item_ids"].of) == ("items", "item_id")
    assert (args["new_item_ids"].binds, args["new_item_ids"].of) == ("pair", "item_ids")
    tasks = generate_tasks(world, 8, seed=0, templates=list(ITEMS))
    assert {t.provenance.template for t in tasks} == set(ITEMS)
    variants = {i: pid for pid, p in world.table("products").items() for i in p.variants}
    oracle = world.domain.require("oracle")()
    for t in tasks:
        write = t.gold_actions[-1]
        order = world.table("orders")[write.arguments["order_id"]]
        assert set(write.arguments["item_ids"]) <= {i.item_id for i in order.items}
        pairs = zip(write.arguments["item_ids"], write.arguments["new_item_ids"], strict=True)
        assert all(variants[old] == variants[new] and old != new for old, new in pairs)
        assert all(e.ok for e in replay_gold(world, t).log)
        assert grade(world, t, run_episode(world, t, oracle, ScriptedUser())).passed


def test_a_booking_is_asked_for_with_bookable_flights_and_the_price_the_tool_named(tau2_airline_dir):
    world = load_world(str(tau2_airline_dir), "airline+generic")
    tasks = generate_tasks(world, 3, seed=0, templates=["book_reservation"])
    assert tasks and all(t.gold_actions[-1].name == "book_reservation" for t in tasks)
    oracle = world.domain.require("oracle")()
    for t in tasks:
        args = t.gold_actions[-1].arguments
        flights = world.table("flights")
        assert all(flights[f["flight_number"]].dates[f["date"]].status == "available" for f in args["flights"])
        log = replay_gold(world, t).log
        assert all(e.ok for e in log) and '"reservation_id"' in (log[-1].content or "")
        assert grade(world, t, run_episode(world, t, oracle, ScriptedUser())).passed
