"""The baseline corpus: flaws follow situations (forgot email → invention, a later request → plan adherence, an
order in the wrong status → misread), each planted flaw fails its trial for its own reason, and the failure-mode
analyzer names the planted mode; tasks in no situation are solved as the oracle solves them."""

from __future__ import annotations

from functools import lru_cache

from pipeline.authoring.templates import generate_tasks
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.embedded.corpus import (
    SITUATION_MODE,
    SituatedFlawedAgent,
    SituatedFlaws,
    encode_trajectories,
    run_corpus,
    situation_counts,
    situations,
)
from pipeline.grading.failure_modes import analyze
from pipeline.grading.grader import grade
from pipeline.rollout.runner import run_episode
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world
from tests.train.helpers import COMPACT, tokenizer

ALWAYS = SituatedFlaws(rates={"forgot_email": 1.0, "later_request": 1.0, "wrong_status": 1.0, "gift_card_short": 1.0})


@lru_cache(maxsize=1)
def setting():
    world = load_world("gen-3-12x40x100")
    return world, tuple(generate_tasks(world, 60, seed=2))


def test_situations_are_read_from_the_task_and_the_world():
    world, tasks = setting()
    counts = situation_counts(world, tasks)
    assert all(counts[s] > 0 for s in SITUATION_MODE), counts
    for task in tasks:
        found = situations(world, task)
        for i, s in found.items():
            req = task.user_script.requests[i]
            if s == "forgot_email":
                assert task.user_script.messes.forgot_email
            elif s == "later_request":
                assert i > 0
            elif s == "gift_card_short":
                methods = world.db.users[task.customer_user_id].payment_methods
                cards = [m for m in methods.values() if m.source == "gift_card"]
                paid = world.db.orders[req.order_id].payment_history[0].amount
                assert req.intent == "modify_payment" and req.expect == "refused"
                assert any((m.balance or 0.0) < paid for m in cards)
            else:
                assert (
                    req.expect == "refused"
                    and world.db.orders[req.order_id].status != "pending"
                    or (req.intent == "return" and world.db.orders[req.order_id].status != "delivered")
                )


def test_each_situation_fails_for_its_own_mode_and_other_tasks_pass():
    world, tasks = setting()
    agent = SituatedFlawedAgent(world, ALWAYS)
    seen = set()
    for task in tasks:
        traj = run_episode(world, task, agent, ScriptedUser())
        verdict = grade(world, task, traj)
        planted = {SITUATION_MODE[s] for s in situations(world, task).values()}
        assert set(agent.planted(task, 0)) == planted
        if not planted:
            assert verdict.passed, task.id
            continue
        assert not verdict.passed, task.id
        found = set(analyze(task, traj, verdict).modes)
        assert found & planted, (task.id, planted, found)
        seen |= found & planted
    assert seen == set(SITUATION_MODE.values())


def test_the_wrong_status_flaw_misreads_the_status_in_its_status_fact():
    """In a wrong-status situation the flawed agent states the status the request needs (not the one the tool
    showed) and goes on to ask for the details, so its mistake is a misread written in the conversation."""
    world, tasks = setting()
    agent = SituatedFlawedAgent(world, ALWAYS)
    checked = 0
    for task in tasks:
        wrong = [i for i, s in situations(world, task).items() if s == "wrong_status"]
        if not wrong:
            continue
        req = task.user_script.requests[wrong[0]]
        shown = world.db.orders[req.order_id].status
        traj = run_episode(world, task, agent, ScriptedUser())
        said = [m.content for m in traj.messages if m.role == "assistant" and (m.content or "").startswith("Order ")]
        fact = next((t for t in said if t.startswith(f"Order {req.order_id} is '")), None)
        if fact is None:  # nothing it could attempt (e.g. an address it cannot parse): refused as the oracle does
            continue
        assert f"is '{shown}';" not in fact and "I cannot do that" not in fact, fact
        checked += 1
    assert checked >= 3


def test_refusals_the_tools_explain_are_misread_by_going_ahead():
    """A gift card whose shown balance is short, and an order whose items were already modified: the flawed agent
    confirms the write the customer asked for (the card, the variants it looked up) and attempts it; the tool
    refuses and the analyzer names the misread."""
    world, tasks = setting()
    agent = SituatedFlawedAgent(world, ALWAYS)
    seen = set()
    for task in tasks:
        found = situations(world, task)
        for i, s in found.items():
            req = task.user_script.requests[i]
            kind = "gift_card_short" if s == "gift_card_short" else req.intent if s == "wrong_status" else None
            if kind not in ("gift_card_short", "modify_items") or kind in seen:
                continue
            traj = run_episode(world, task, agent, ScriptedUser())
            tool = "modify_pending_order_payment" if kind == "gift_card_short" else "modify_pending_order_items"
            calls = [c for m in traj.messages for c in m.tool_calls or [] if c.name == tool]
            assert calls and calls[0].arguments["order_id"] == req.order_id, task.id
            verdict = grade(world, task, traj)
            assert not verdict.passed and "misread" in analyze(task, traj, verdict).modes, task.id
            seen.add(kind)
    assert seen == {"gift_card_short", "modify_items"}


def test_rates_are_per_situation_and_deterministic():
    world, tasks = setting()
    config = SituatedFlaws(
        rates={"forgot_email": 0.5, "later_request": 0.0, "wrong_status": 0.0, "gift_card_short": 0.0}, seed=4
    )
    agent = SituatedFlawedAgent(world, config)
    table = [agent.planted(t, k) for t in tasks for k in range(4)]
    assert table == [SituatedFlawedAgent(world, config).planted(t, k) for t in tasks for k in range(4)]
    assert {m for row in table for m in row} == {"invention"}
    fe = [t for t in tasks if "forgot_email" in situations(world, t).values()]
    share = sum("invention" in agent.planted(t, k) for t in fe for k in range(4)) / (4 * len(fe))
    assert 0.25 < share < 0.75


def test_gold_corpus_is_verified_and_encodes_with_assistant_masks():
    world, tasks = setting()
    gold = run_corpus(world, tasks[:6], OracleAgent(), trials=2, seed=1, passing_only=True)
    assert len(gold) == 12
    examples = encode_trajectories(gold, world, tokenizer(), COMPACT)
    assert all(len(e.ids) == len(e.mask) and 0 < sum(e.mask) < len(e.ids) for e in examples)
