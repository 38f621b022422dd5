"""The oracle: policy-following behaviour, value provenance, and figures taken only from tools."""

from __future__ import annotations

import json
import re

import pytest

from pipeline.agents.scripted import phrases as P
from pipeline.domains.retail import phrases as R
from pipeline.domains.retail.oracle import OracleAgent, appears_in
from pipeline.domains.retail.tools import TOOLS, WRITE_TOOLS
from pipeline.formats.codec import compact_tool_result
from pipeline.grading.static_checks import affirms
from pipeline.rollout.protocols import EpisodeInfo, UserReply
from pipeline.rollout.runner import run_episode
from pipeline.rollout.trajectory import Message
from pipeline.users.scripted import ScriptedUser
from tests.agents.scripted_helpers import find, small_tasks, small_world, unsupported_write_values

MONEY = re.compile(r"\$(\d+\.\d\d)")
STATUS_FACT = re.compile(r"Order (#W\d+) is '([^']+)'; to be \w+, an order must be '(\w+)'\.")


@pytest.fixture(scope="module")
def episodes():
    world = small_world()
    return [(t, run_episode(world, t, OracleAgent(), ScriptedUser(), trial=k)) for t in small_tasks() for k in (0, 1)]


def test_every_written_value_appeared_earlier_in_the_conversation(episodes):
    for task, traj in episodes:
        assert unsupported_write_values(traj.messages) == [], task.id


def test_one_tool_call_per_message_never_with_text(episodes):
    for _, traj in episodes:
        for m in traj.messages:
            if m.role == "assistant":
                assert (len(m.tool_calls) == 1 and m.content is None) or (not m.tool_calls and m.content)
                for call in m.tool_calls:
                    assert json.loads(call.raw_arguments) == call.arguments and call.name in TOOLS


def test_authenticates_before_anything_private_and_confirms_every_write(episodes):
    for task, traj in episodes:
        authed = False
        for k, m in enumerate(traj.messages):
            for call in m.tool_calls:
                if call.name.startswith("find_user_id_by_"):
                    authed = not traj.messages[k + 1].error
                elif TOOLS[call.name].private:
                    assert authed, (task.id, call.name)
                if call.name in WRITE_TOOLS:
                    ask, yes = traj.messages[k - 2], traj.messages[k - 1]
                    assert P.YES_NO in ask.content and affirms(yes.content), task.id
        assert traj.termination == "user_stop"


def test_confirmations_name_order_items_as_the_compact_order_lines_start(episodes):
    """`Name <id> (options)`: what the tiny model writes to confirm is a copy of the start of that item's line."""
    named = 0
    for task, traj in episodes:
        lines = [
            line
            for m in traj.messages
            if m.role == "tool" and m.name == "get_order_details" and not m.error
            for line in compact_tool_result(m.content).splitlines()
        ]
        for m in traj.messages:
            if m.role == "assistant" and m.content and m.content.startswith("To confirm"):
                for item_id in re.findall(r" (\d{10}) \(", m.content):
                    line = next(x for x in lines if f" {item_id} (" in x)
                    assert line.split(" | ")[0] in m.content, task.id
                    named += 1
    assert named > 10


def test_payment_methods_are_named_as_the_account_lists_them_after_the_customer_names_one(episodes):
    """A method the customer picks from their account is confirmed as its compact line starts (`gift card
    gift_card_0880141`), and the account is read only after the customer named it: before the answer, whether
    it is needed at all (a refund to a gift card, not to the original method) is not known. (A new payment method
    always comes from the account, which is read before asking which one.)"""
    named = asked = 0
    for task, traj in episodes:
        msgs = traj.messages
        for k, m in enumerate(msgs):
            if m.role != "assistant" or not (m.content or "").startswith("To confirm"):
                continue
            account = next((r for r in reversed(msgs[:k]) if r.role == "tool" and r.name == "get_user_details"), None)
            for method_id in re.findall(
                r"(?:payment method|refund to|refunded to): .*?((?:credit_card|paypal|gift_card)_\d+)", m.content
            ):
                if account is None or method_id not in account.content:
                    continue
                rows = compact_tool_result(account.content).splitlines()
                row = next(x for x in rows if f" {method_id}" in x or x.startswith(method_id))
                assert row.split(" | ")[0] in m.content, task.id
                named += 1
        for k, m in enumerate(msgs):
            if m.role == "assistant" and re.search(r"Which payment method should (receive|pay)", m.content or ""):
                since = next(j for j in range(k - 1, -1, -1) if msgs[j].role == "user")
                reads = [c.name for x in msgs[since:k] for c in x.tool_calls]
                assert "get_user_details" not in reads, task.id
                asked += 1
    assert named >= 3 and asked >= 3


def test_stated_figures_come_from_tool_results(episodes):
    for task, traj in episodes:
        numbers: set[float] = set()
        for m in traj.messages:
            if m.role == "tool":
                numbers |= {round(float(x), 2) for x in re.findall(r"-?\d+\.\d+|\d+", m.content or "")}
            elif m.role == "assistant" and m.content:
                for figure in MONEY.findall(m.content):
                    assert float(figure) in numbers or -float(figure) in numbers, (task.id, figure)


def test_refusals_name_a_reason_and_write_nothing(episodes):
    for task, traj in episodes:
        if all(r.expect == "refused" for r in task.user_script.requests):
            assert not any(c.name in WRITE_TOOLS for c in traj.tool_calls()), task.id
            texts = [m.content for m in traj.messages if m.role == "assistant" and m.content]
            # the reason follows the refusal, or (a status rule) the status fact comes right before it
            assert any("I cannot do that:" in t or (STATUS_FACT.match(t) and P.REFUSED_AFTER_FACT in t) for t in texts)
        assert not any(P.NO_POLICY_REASON in (m.content or "") for m in traj.messages), task.id


def test_the_status_fact_comes_first_and_decides(episodes):
    """After reading an order whose status a request depends on, the next message starts with that status and the
    one the request needs, as the tool showed them; the message proceeds when they are equal and refuses otherwise."""
    facts = 0
    for _, traj in episodes:
        msgs = traj.messages
        for k, m in enumerate(msgs):
            fact = STATUS_FACT.match(m.content or "") if m.role == "assistant" else None
            if not fact:
                continue
            facts += 1
            shown = next(
                json.loads(r.content)["status"]
                for r in reversed(msgs[:k])
                if r.role == "tool" and not r.error and (r.content or "").startswith('{"order_id": "' + fact[1])
            )
            assert fact[2] == shown, m.content
            assert (P.REFUSED_AFTER_FACT in m.content) == (fact[2] != fact[3]), m.content
    assert facts >= 10


def test_gold_reads_are_the_reads_it_makes(episodes):
    """The gold actions, plus a look at each order the customer named that the plan does not read: the world
    refuses another customer's order, which is how the oracle (and a model imitating it) finds out whose it is."""
    looked = 0
    for task, traj in episodes:
        refused = {
            str(("get_order_details", c.arguments))
            for k, m in enumerate(traj.messages)
            for c in m.tool_calls
            if c.name == "get_order_details" and "another customer" in (traj.messages[k + 1].content or "")
        }
        made = [(c.name, c.arguments) for c in traj.tool_calls()]
        gold = [(a.name, a.arguments) for a in task.gold_actions]
        assert sorted(x for x in map(str, made) if x not in refused) == sorted(map(str, gold)), task.id
        looked += len(refused)
        if task.provenance.template == "other_customer":
            assert refused, task.id  # looked at the order first, even though the plan reads the account
    assert looked >= 2


def test_only_uses_the_user_given_email_and_asks_again_when_unknown():
    task = find(small_tasks(), "cancel", forgot_email=False)
    info = EpisodeInfo(task=task, trial=0, seed=0, policy="", tools=[])
    ep = OracleAgent().start(info)
    msgs = [Message(role="user", content=task.user_script.requests[0].utterance)]
    msgs.append(ep.act(msgs))
    assert msgs[-1].content == R.ASK_EMAIL
    msgs.append(Message(role="user", content="It's nobody@nowhere.org."))
    call = ep.act(msgs)
    assert call.tool_calls[0].arguments == {"email": "nobody@nowhere.org"}
    msgs += [call, Message(role="tool", content="Error: user not found", tool_call_id="call_1", error=True)]
    assert ep.act(msgs).content == P.NOT_FOUND_IDENTITY


def test_appears_in_handles_lists_and_empty_values():
    assert appears_in(["a1", "b2"], ["x a1 y", "b2"]) and appears_in("", []) and not appears_in(["a1", "c3"], ["a1"])


def test_money_and_phrases():
    assert P.money(-3.1) == "-$3.10" and P.money(12) == "$12.00"
    assert "(yes/no)" in R.confirm("cancel", "#W1", ["reason: 'no longer needed'"])


class _SaysNo:
    """The scripted user, except that every confirmation is answered with a no."""

    name = "says-no"

    def start(self, info):
        inner = ScriptedUser().start(info)

        class Episode:
            def respond(self, messages):
                reply = inner.respond(messages)
                return UserReply(content="No, I changed my mind.") if affirms(reply.content) else reply

        return Episode()


def test_a_no_means_no_write():
    world = small_world()
    task = find(small_tasks(), "modify_payment")
    traj = run_episode(world, task, OracleAgent(), _SaysNo())
    assert not any(c.name in WRITE_TOOLS for c in traj.tool_calls())
    assert any(m.content == P.declined() for m in traj.messages if m.role == "assistant")
    assert traj.final_changed == {"products": {}, "users": {}, "orders": {}}
