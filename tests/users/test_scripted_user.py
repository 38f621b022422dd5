"""The scripted customer: personas change wording only; each mess behaves as scripted; it stops when done."""

from __future__ import annotations

import pytest

from pipeline.dataset.task import PERSONAS
from pipeline.domains.retail import user as R
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.grading.static_checks import affirms
from pipeline.rollout.protocols import EpisodeInfo
from pipeline.rollout.runner import run_episode
from pipeline.rollout.trajectory import STOP_TOKEN, Message
from pipeline.users import scripted as U
from pipeline.users.phrasing import FORGOT
from pipeline.users.scripted import ScriptedUser
from tests.agents.scripted_helpers import find, small_tasks, small_world


class Chat:
    """Drives one scripted-user episode with hand-written agent lines."""

    def __init__(self, task, persona="terse", trial=0, **kw):
        info = EpisodeInfo(task=task, trial=trial, seed=0, policy="", tools=[], persona=persona, domain="retail")
        self.user = ScriptedUser(**kw).start(info)
        self.messages: list[Message] = []
        self.last = self._user()

    def _user(self):
        reply = self.user.respond(self.messages)
        self.messages.append(Message(role="user", content=reply.content))
        self.stopped = reply.stop
        return reply.content

    def agent(self, text: str) -> str:
        self.messages.append(Message(role="assistant", content=text))
        self.last = self._user()
        return self.last


def tasks():
    return small_tasks()


@pytest.mark.parametrize("persona", PERSONAS)
def test_persona_changes_wording_never_content(persona):
    task = find(tasks(), "modify_items", vague_item=False, forgot_email=False)
    req = task.user_script.requests[0]
    chat = Chat(task, persona)
    assert req.utterance in chat.last
    assert chat.agent("What is the email address on your account?").count(task.user_script.known.email) == 1
    assert req.details["payment_method"] in chat.agent("Which payment method should pay the price difference?")
    yes = chat.agent(f"I will modify items of order {req.order_id}. Shall I proceed (yes/no)?")
    assert affirms(yes)
    bye = chat.agent(f"Order {req.order_id} has been modified. Is there anything else I can help you with?")
    assert chat.stopped and bye.endswith(STOP_TOKEN)


def test_personas_differ_in_wording_and_reach_the_same_end_state():
    world = small_world()
    task = find(tasks(), "two_requests", writes=2)
    runs = {}
    for persona in PERSONAS:
        t = task.model_copy(update={"user_script": task.user_script.model_copy(update={"persona": persona})})
        runs[persona] = run_episode(world, t, OracleAgent(), ScriptedUser())
    assert len({r.final_hash for r in runs.values()}) == 1
    openings = {r.messages[0].content for r in runs.values()}
    assert len(openings) == len(PERSONAS)


def test_vague_item_then_precise_when_asked():
    task = find(tasks(), "exchange", vague_item=True)
    req = task.user_script.requests[0]
    chat = Chat(task, "formal")
    assert req.vague_utterance in chat.last and req.details["items"] not in chat.last
    assert req.details["items"] in chat.agent("Which items exactly would you like to change, and to which options?")


def test_forgot_email_says_so_then_gives_name_and_zip():
    task = find(tasks(), forgot_email=True)
    known = task.user_script.known
    chat = Chat(task, "chatty")
    assert chat.agent("Could you give me your email address?") == FORGOT
    again = chat.agent("Please tell me your email so I can look you up.")
    assert known.zip in again and known.first_name in again
    chat2 = Chat(task, "terse")
    chat2.agent("What's your email?")
    reply = chat2.agent("Then what are your first name, last name and zip code?")
    assert reply == R.NAME_ZIP.format(first=known.first_name, last=known.last_name, zip=known.zip)
    assert all(known.email not in m.content for m in chat.messages + chat2.messages if m.role == "user")


def test_also_request_comes_only_after_the_first_is_done():
    task = find(tasks(), "two_requests", also_request=True)
    first, last = task.user_script.requests
    vague = task.user_script.messes.vague_item
    chat = Chat(task)
    assert ((first.vague_utterance if vague else None) or first.utterance) in chat.last
    assert last.utterance not in chat.last and (last.vague_utterance or "@@") not in chat.last
    chat.agent("What is your email?")
    # an 'anything else' with nothing done and nothing refused does not count as handling the request
    assert "not sure what you mean" in chat.agent("Is there anything else I can help you with?")
    nxt = chat.agent(f"Order {first.order_id} has been updated. Is there anything else I can help you with?")
    if first.expect == "refused" and task.user_script.messes.pushback:
        nxt = chat.agent("I'm sorry, but I cannot do that. Is there anything else I can help you with?")
    assert nxt.startswith("Oh, can you also")
    assert ((last.vague_utterance if vague else None) or last.utterance) in nxt


@pytest.mark.parametrize("pushback", [True, False])
def test_pushback_once_on_a_refusal(pushback):
    task = find(tasks(), "cancel_wrong_status", pushback=pushback)
    chat = Chat(task, "anxious")
    refusal = "I'm sorry, but I cannot do that: the order is delivered. Is there anything else I can help you with?"
    reply = chat.agent(refusal)
    if pushback:
        assert reply == U.PUSHBACK and not chat.stopped
        reply = chat.agent(refusal)
    assert chat.stopped and STOP_TOKEN in reply


def test_yes_only_when_the_confirmation_names_the_current_order():
    task = find(tasks(), "cancel")
    req = task.user_script.requests[0]
    chat = Chat(task)
    no = chat.agent("To confirm, I will cancel order #W9999999. Shall I proceed (yes/no)?")
    assert no.startswith("No") and not affirms(no)
    assert affirms(chat.agent(f"Should I go ahead and cancel order {req.order_id}?"))


def test_user_address_confirmation_needs_the_new_zip():
    task = find(tasks(), "modify_user_address")
    zip_ = task.user_script.requests[0].details["address"].rsplit("zip ", 1)[1].rstrip(".")
    chat = Chat(task)
    assert not affirms(chat.agent("I will change your default address to 1 Main St, zip 00000. (yes/no)?"))
    assert affirms(chat.agent(f"I will change your default address to ..., zip {zip_}. Shall I proceed (yes/no)?"))


def test_paraphrased_agent_messages_are_understood():
    task = find(tasks(), "cancel", forgot_email=False)
    req, known = task.user_script.requests[0], task.user_script.known
    chat = Chat(task)
    assert known.email in chat.agent("Sure! May I have the email tied to your account, please?")
    assert req.details["reason"] in chat.agent("Got it. And why would you like to cancel it?")
    assert affirms(chat.agent(f"Just to double-check: cancel {req.order_id}, right? Would you like me to do it?"))
    chat.agent(f"Done, {req.order_id} is cancelled. Can I help you with anything else?")
    assert chat.stopped


def test_gives_up_after_unproductive_turns_and_stops_on_transfer():
    task = find(tasks(), "return")
    chat = Chat(task, max_unproductive=3)
    for _ in range(3):
        chat.agent("Lorem ipsum dolor sit amet.")
    assert chat.stopped and STOP_TOKEN in chat.last
    chat = Chat(task)
    chat.agent("YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.")
    assert chat.stopped


def test_no_request_means_an_immediate_stop():
    task = find(tasks(), "cancel")
    empty = task.model_copy(update={"user_script": task.user_script.model_copy(update={"requests": []})})
    assert Chat(empty).stopped


def test_only_confirmations_are_answered_with_a_yes():
    """A detail answer must never read as a 'yes' to the grader, or skipped confirmations would go unseen."""
    world = small_world()
    for task in tasks()[:40]:
        for trial in range(2):
            traj = run_episode(world, task, OracleAgent(), ScriptedUser(), trial=trial)
            msgs = traj.messages
            for k, m in enumerate(msgs):
                if m.role == "user" and k > 0:
                    asked_yes_no = msgs[k - 1].role == "assistant" and "(yes/no)" in (msgs[k - 1].content or "")
                    assert affirms(m.content) == asked_yes_no, (task.id, m.content)


def test_same_task_and_trial_same_replies():
    world = small_world()
    task = find(tasks(), "two_requests")
    a = run_episode(world, task, OracleAgent(), ScriptedUser(), trial=2)
    b = run_episode(world, task, OracleAgent(), ScriptedUser(), trial=2)
    assert [m.content for m in a.messages] == [m.content for m in b.messages]
