"""Dual control in the generic core, on telecom: each side calls only its own tools, results go back only to the
caller, the agent never sees the customer's calls, the synchronisation runs after every call, set-up runs before
the first message, and the trajectory, replay, state hash, grading and resume cover both sides."""

from __future__ import annotations

import json

import pytest

from pipeline.dataset.replay import replay_gold
from pipeline.dataset.setup import start_session
from pipeline.dataset.task import Action
from pipeline.grading.grader import grade
from pipeline.grading.tau2_reward import tau2_reward
from pipeline.rollout.protocols import EpisodeInfo, UserReply
from pipeline.rollout.runner import run_episode
from pipeline.rollout.trajectory import Message, ToolCall, Trajectory
from pipeline.world.tools import execute

REFUEL_TASK = "[mobile_data_issue]data_mode_off|data_usage_exceeded[PERSONA:None]"


@pytest.fixture(scope="module")
def loaded():
    from pipeline.domains.telecom.domain import TELECOM
    from tests.needs import need_tau2

    telecom_dir = need_tau2("telecom")
    world, tasks = TELECOM.tau2_importer().load(telecom_dir)
    return world, {t.id: t for t in tasks}


def _call(i: int, name: str, **arguments) -> ToolCall:
    return ToolCall(id=f"c{i}", name=name, arguments=arguments)


class ScriptAgent:
    """Says or calls what its script holds, one message per step; records what it was shown."""

    name = "script-agent"

    def __init__(self, steps: list[Message]) -> None:
        self.steps, self.seen = steps, []

    def start(self, info: EpisodeInfo):
        self.info = info
        return self

    def act(self, messages: list[Message]) -> Message:
        self.seen.append(list(messages))
        return self.steps.pop(0) if self.steps else Message(role="assistant", content="")


class ScriptUser:
    """Replies from a script: a list of UserReply, each either tool calls of the phone or text; records its view."""

    name = "script-user"

    def __init__(self, replies: list[UserReply]) -> None:
        self.replies, self.seen = replies, []

    def start(self, info: EpisodeInfo):
        self.info = info
        return self

    def respond(self, messages: list[Message]) -> UserReply:
        self.seen.append(list(messages))
        return self.replies.pop(0) if self.replies else UserReply(content="###STOP###", stop=True)


def _fixing_episode(world, task):
    agent = ScriptAgent(
        [
            Message(role="assistant", tool_calls=[_call(1, "get_customer_by_phone", phone_number="555-123-2002")]),
            Message(role="assistant", tool_calls=[_call(2, "toggle_data")]),  # not the agent's tool
            Message(role="assistant", content="Please turn your mobile data on."),
            Message(
                role="assistant",
                tool_calls=[_call(3, "refuel_data", customer_id="C1001", line_id="L1002", gb_amount=2.0)],
            ),
            Message(role="assistant", content="I added 2 GB. Please run a speed test."),
        ]
    )
    user = ScriptUser(
        [
            UserReply(content="My data does not work. I am John Smith, 555-123-2002."),
            UserReply(content="", tool_calls=[ToolCall(id="u1", name="toggle_data", arguments={})]),
            UserReply(content="", tool_calls=[ToolCall(id="u2", name="refuel_data", arguments={})]),  # not theirs
            UserReply(content="Done, data is on."),
            UserReply(content="", tool_calls=[ToolCall(id="u3", name="run_speed_test", arguments={})]),
            UserReply(content="###STOP###", stop=True),
        ]
    )
    return agent, user, run_episode(world, task, agent, user)


def test_each_side_runs_its_own_tools_and_sees_only_its_own_results(loaded):
    world, tasks = loaded
    agent, user, traj = _fixing_episode(world, tasks[REFUEL_TASK])
    assert agent.info.tools and user.info.user_tools
    assert {t["function"]["name"] for t in user.info.user_tools} >= {"toggle_data", "run_speed_test"}
    tool_msgs = [m for m in traj.messages if m.role == "tool"]
    assert [m.error for m in tool_msgs] == [False, True, False]  # the agent's toggle_data does not exist for it
    assert "unknown tool 'toggle_data'" in tool_msgs[1].content
    # the agent never sees the customer's calls or results
    for view in agent.seen:
        assert not any(m.role == "user" and m.tool_calls for m in view)
        assert not any("Speed Test" in (m.content or "") or "Mobile Data is now" in (m.content or "") for m in view)
    # the customer sees its own results, and its unknown tool is refused to it
    calls = traj.customer_calls
    assert [c.call.name for c in calls] == ["toggle_data", "refuel_data", "run_speed_test"]
    assert [c.result.error for c in calls] == [False, True, False]
    assert calls[2].result.content.startswith("Speed Test Result: 275.00 Mbps (Excellent)")
    last_view = user.seen[-1]
    assert any(m.role == "tool" and m.content == calls[2].result.content for m in last_view)
    # ... and never the agent's calls or their results
    assert not any(m.role == "tool" and m.tool_call_id in ("c1", "c2", "c3") for m in last_view)
    assert not any(m.role == "assistant" and m.tool_calls for m in last_view)
    # both sides in the world log; agent events keep their old shape
    sides = [e.get("requestor", "assistant") for e in traj.world_log]
    assert sides == ["assistant", "assistant", "user", "user", "assistant", "user"]
    assert "requestor" not in traj.world_log[0]


def test_synchronisation_and_set_up_reach_the_phone(loaded):
    world, tasks = loaded
    task = tasks[REFUEL_TASK]
    session = start_session(world, task)
    assert session.log == []  # set-up leaves no events
    where = session.get("surroundings", "customer")
    assert where.phone_number == "555-123-2002" and where.mobile_data_usage_exceeded  # set-up, then synchronised
    assert not session.get("device", "customer").data_enabled
    session.authenticated_user_id = "C1001"
    event = execute(session, "refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 2.0})
    assert event.ok and ("surroundings", "customer") in event.touched
    assert not session.get("surroundings", "customer").mobile_data_usage_exceeded


def test_state_hash_replay_and_grading_cover_both_sides(loaded):
    world, tasks = loaded
    task = tasks[REFUEL_TASK]
    _, _, traj = _fixing_episode(world, task)
    assert traj.final_changed["device"]["customer"]["data_enabled"] is True
    gold = replay_gold(world, task)
    assert traj.final_hash == gold.state_hash()  # same end state on both sides as the gold actions reach
    verdict = grade(world, task, traj)
    by_name = {c.name: c for c in verdict.components}
    assert by_name["replay_consistency"].passed, by_name["replay_consistency"].details
    assert by_name["state"].passed and by_name["env_assertions"].passed
    assert verdict.tau2.reward == 1.0
    # a customer result tampered with is caught by the replay
    bad = traj.model_copy(deep=True)
    bad.customer_calls[2].result.content = "Speed Test Result: 999 Mbps"
    assert not {c.name: c for c in grade(world, task, bad).components}["replay_consistency"].passed


def test_without_the_customer_acting_the_assertions_fail(loaded):
    world, tasks = loaded
    task = tasks[REFUEL_TASK]
    agent = ScriptAgent(
        [
            Message(role="assistant", tool_calls=[_call(1, "get_customer_by_phone", phone_number="555-123-2002")]),
            Message(
                role="assistant",
                tool_calls=[_call(2, "refuel_data", customer_id="C1001", line_id="L1002", gb_amount=2.0)],
            ),
            Message(role="assistant", content="All fixed!"),
        ]
    )
    user = ScriptUser([UserReply(content="My data does not work."), UserReply(content="###STOP###", stop=True)])
    traj = run_episode(world, task, agent, user)
    verdict = grade(world, task, traj)
    env = {c.name: c for c in verdict.components}["env_assertions"]
    assert not env.passed and any("assert_mobile_data_status" in d for d in env.details)
    assert verdict.tau2.reward == 0.0 and not verdict.passed


def test_transfer_tasks_reward_the_transfer_action_and_the_broken_phone(loaded):
    world, tasks = loaded
    task = next(t for t in tasks.values() if t.evaluation.reward_basis == ["ENV_ASSERTION", "ACTION"])
    transfer = [Message(role="assistant", tool_calls=[_call(1, "transfer_to_human_agents", summary="x")])]
    for steps, reward in ((transfer, 1.0), ([Message(role="assistant", content="Bye.")], 0.0)):
        agent = ScriptAgent(list(steps) + [Message(role="assistant", content="Transferring you.")])
        user = ScriptUser([UserReply(content="Help."), UserReply(content="###TRANSFER###", stop=True)])
        result = tau2_reward(world, task, run_episode(world, task, agent, user))
        assert result.reward == reward, result
        assert {c.name: c.reward for c in result.checks}["ENV_ASSERTION"] == 1.0


def test_trajectories_keep_both_sides_through_json(loaded):
    world, tasks = loaded
    _, _, traj = _fixing_episode(world, tasks[REFUEL_TASK])
    again = Trajectory.model_validate_json(traj.model_dump_json())
    assert again == traj and len(again.customer_calls) == 3
    plain = Trajectory(task_id="t", agent="a", user="u", world="w")
    assert "customer_calls" not in json.loads(plain.model_dump_json())  # a record without dual control keeps its bytes


def test_phone_and_carrier_tools_refuse_cleanly(loaded):
    world, tasks = loaded
    session = start_session(world, tasks[REFUEL_TASK])
    before = session.state_hash()
    execute(session, "toggle_airplane_mode", {}, "user")
    on = session.state_hash()
    for name, args, side, category in (
        ("toggle_wifi", {}, "user", "precondition"),  # refused in airplane mode
        ("set_network_mode_preference", {"mode": "6g"}, "user", "invalid_arguments"),
        ("make_payment", {}, "user", "not_found"),
        ("grant_app_permission", {"app_name": "messaging", "permission": "camera"}, "user", "invalid_arguments"),
        ("refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 2.0}, "assistant", "unauthorized"),
    ):
        event = execute(session, name, args, side)
        assert not event.ok and event.error_category == category, (name, event.error)
        assert session.state_hash() == on
    assert on != before
    session.authenticated_user_id = "C1002"
    event = execute(session, "refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 2.0})
    assert event.error_category == "unauthorized"
    session.authenticated_user_id = "C1001"
    event = execute(session, "refuel_data", {"customer_id": "C1001", "line_id": "L1004", "gb_amount": 2.0})
    assert event.error_category == "not_found" and "not found for customer C1001" in event.error


def test_gold_actions_run_each_on_its_side(loaded):
    world, tasks = loaded
    task = tasks[REFUEL_TASK]
    assert [a.requestor for a in task.gold_actions] == ["user", "assistant"]
    swapped = task.model_copy(update={"gold_actions": [Action(name="toggle_data", requestor="assistant")]})
    assert [e.ok for e in replay_gold(world, swapped).log] == [False]


def test_a_tau2_llm_customer_gets_the_phone_tools_through_its_endpoint(loaded):
    from pipeline.users.tau2_llm import Tau2LLMUser
    from tests.agents.fake_openai import FakeOpenAI, completion, tool_call

    world, tasks = loaded
    task = tasks[REFUEL_TASK]
    agent = ScriptAgent(
        [
            Message(role="assistant", content="Please turn on mobile data on your phone."),
            Message(role="assistant", content="Great, anything else?"),
        ]
    )
    replies = [
        completion("My mobile data does not work."),
        completion(None, tool_calls=[tool_call("toggle_data", "{}", "t1")]),
        completion("Done, mobile data is on now."),
        completion("Thanks! ###STOP###"),
    ]
    with FakeOpenAI(replies) as fake:
        user = Tau2LLMUser("sim-m", base_url=fake.base_url, max_retries=0, timeout_s=5)
        traj = run_episode(world, task, agent, user)
    assert traj.termination == "user_stop"
    assert [c.call.name for c in traj.customer_calls] == ["toggle_data"] and not traj.customer_calls[0].result.error
    first, after_call = fake.requests[0], fake.requests[2]
    assert {t["function"]["name"] for t in first["tools"]} == set(world.user_tools.tools)
    assert "tools of your own" in first["messages"][0]["content"]
    roles = [m["role"] for m in after_call["messages"]]
    assert roles[-2:] == ["assistant", "tool"] and after_call["messages"][-1]["content"].startswith(
        "Mobile Data is now ON"
    )
    assert all("Mobile Data is now" not in (m.content or "") for view in agent.seen for m in view)
    assert traj.final_changed["device"]["customer"]["data_enabled"] is True


def test_a_fix_claimed_and_never_verified_is_plan_adherence(loaded):
    from pipeline.grading.failure_modes import analyze

    world, tasks = loaded
    task = tasks[REFUEL_TASK]
    agent = ScriptAgent(
        [
            Message(role="assistant", tool_calls=[_call(1, "get_customer_by_phone", phone_number="555-123-2002")]),
            Message(role="assistant", content="Your data should work now, it is fixed."),
        ]
    )
    user = ScriptUser([UserReply(content="My data does not work."), UserReply(content="###STOP###", stop=True)])
    traj = run_episode(world, task, agent, user)
    analysis = analyze(task, traj, grade(world, task, traj))
    assert analysis.modes == ["plan_adherence"] and analysis.dual_control == ["unverified_fix"]
    assert "unverified_fix: says the issue is fixed, never verified" in analysis.evidence["plan_adherence"][0]
    # an episode that met every assertion names no unverified fix (whatever else it did wrong)
    _, _, fixed = _fixing_episode(world, task)
    evidence = analyze(task, fixed, grade(world, task, fixed)).evidence
    assert not any("never verified" in line for lines in evidence.values() for line in lines)


def test_a_set_up_switch_already_in_place_is_toggled_twice_with_its_searches(loaded):
    from pipeline.dataset.setup import run_setup_action
    from pipeline.dataset.task import Action

    world, _ = loaded
    session = world.session()
    assert session.get("device", "customer").network_signal_strength == "good"  # the pristine phone, never searched
    run_setup_action(session, Action(name="turn_roaming_off", requestor="user"))  # roaming is off already
    phone = session.get("device", "customer")
    assert not phone.roaming_enabled and phone.network_signal_strength == "excellent"  # searched: 5G, excellent
