"""The episode runner with tiny scripted participants: termination reasons, malformed calls, what is recorded."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import pytest

from pipeline.dataset.task import Provenance, Task, UserScript
from pipeline.domains.retail.tools import TOOLS, execute
from pipeline.rollout.persona import choose_persona
from pipeline.rollout.protocols import (
    Agent,
    AgentEpisode,
    EpisodeInfo,
    InfrastructureError,
    User,
    UserEpisode,
    UserReply,
)
from pipeline.rollout.runner import Limits, run_episode
from pipeline.rollout.trajectory import Message, ToolCall, Trajectory, Usage

SOFIA, SOFIA_EMAIL, SOFIA_ORDER = "sofia_rossi_8776", "sofia.rossi2645@example.com", "#W5918442"

Step = Message | Exception | Callable[[list[Message]], Message]


class ScriptedAgentEpisode:
    def __init__(self, steps: Iterable[Step], seen: list[int]) -> None:
        self.steps = iter(steps)
        self.seen = seen

    def act(self, messages: list[Message]) -> Message:
        self.seen.append(len(messages))
        step = next(self.steps)
        if isinstance(step, Exception):
            raise step
        if callable(step):
            return step(messages)
        return step.model_copy(deep=True)


class ScriptedAgent:
    """Plays back assistant messages; an exception in the script is raised from `act`."""

    name = "scripted-agent"

    def __init__(self, steps: Iterable[Step]) -> None:
        self.steps = steps
        self.infos: list[EpisodeInfo] = []
        self.seen: list[int] = []

    def start(self, info: EpisodeInfo) -> AgentEpisode:
        self.infos.append(info)
        return ScriptedAgentEpisode(self.steps, self.seen)


class ScriptedUserEpisode:
    def __init__(self, replies: Iterable[UserReply | Exception]) -> None:
        self.replies = iter(replies)

    def respond(self, messages: list[Message]) -> UserReply:
        reply = next(self.replies)
        if isinstance(reply, Exception):
            raise reply
        return reply


class ScriptedUser:
    name = "scripted-user"

    def __init__(self, replies: Iterable[UserReply | Exception]) -> None:
        self.replies = replies

    def start(self, info: EpisodeInfo) -> UserEpisode:
        return ScriptedUserEpisode(self.replies)


def forever(step):
    while True:
        yield step


def say(text: str | None, usage: Usage | None = None) -> Message:
    return Message(role="assistant", content=text, usage=usage)


def calls(*tool_calls: tuple[str, dict | None] | ToolCall, usage: Usage | None = None) -> Message:
    out = []
    for i, c in enumerate(tool_calls):
        out.append(c if isinstance(c, ToolCall) else ToolCall(id=f"call_{i}", name=c[0], arguments=c[1]))
    return Message(role="assistant", tool_calls=out, usage=usage)


@pytest.fixture
def task() -> Task:
    return Task(
        id="runner-test",
        world="tau2_retail",
        customer_user_id=SOFIA,
        user_script=UserScript(goal="cancel an order"),
        provenance=Provenance(source="eval"),
    )


def test_scripted_participants_satisfy_the_protocols():
    assert isinstance(ScriptedAgent([]), Agent)
    assert isinstance(ScriptedUser([]), User)
    assert isinstance(ScriptedAgentEpisode([], []), AgentEpisode)
    assert isinstance(ScriptedUserEpisode([]), UserEpisode)


def test_full_episode_agent_stop_and_everything_recorded(tau2_world, task):
    agent_usage = [Usage(prompt_tokens=100, completion_tokens=10, compute_s=0.5) for _ in range(4)]

    def slow_text(messages):
        time.sleep(0.01)
        return say("Cancelled. Anything else?", agent_usage[2])

    agent = ScriptedAgent(
        [
            calls(("find_user_id_by_email", {"email": SOFIA_EMAIL}), usage=agent_usage[0]),
            calls(
                ("get_order_details", {"order_id": SOFIA_ORDER}),
                ("cancel_pending_order", {"order_id": SOFIA_ORDER, "reason": "no longer needed"}),
                usage=agent_usage[1],
            ),
            slow_text,
            say("", agent_usage[3]),
        ]
    )
    user = ScriptedUser(
        [
            UserReply("Please cancel #W5918442, my email is " + SOFIA_EMAIL, usage=Usage(prompt_tokens=7)),
            UserReply("No, thanks.", usage=Usage(prompt_tokens=8, completion_tokens=3)),
        ]
    )
    traj = run_episode(tau2_world, task, agent, user, trial=3, seed=11)

    assert traj.termination == "agent_stop"
    assert traj.error is None and not traj.infra_error
    assert (traj.task_id, traj.trial, traj.seed) == ("runner-test", 3, 11)
    assert (traj.agent, traj.user, traj.world) == ("scripted-agent", "scripted-user", tau2_world.name)
    assert traj.persona == choose_persona("runner-test", 3)
    assert [(m.role, bool(m.tool_calls), m.error) for m in traj.messages] == [
        ("user", False, False),
        ("assistant", True, False),
        ("tool", False, False),
        ("assistant", True, False),
        ("tool", False, False),
        ("tool", False, False),
        ("assistant", False, False),
        ("user", False, False),
        ("assistant", False, False),
    ]
    tool_msgs = [m for m in traj.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_msgs] == ["call_0", "call_0", "call_1"]
    assert [m.name for m in tool_msgs] == ["find_user_id_by_email", "get_order_details", "cancel_pending_order"]
    assert tool_msgs[0].content == SOFIA
    assert '"status": "cancelled"' in tool_msgs[2].content
    assert [c.name for c in traj.tool_calls()] == [m.name for m in tool_msgs]
    # the agent saw the conversation grow: the user's opening, then each tool result
    assert agent.seen == [1, 3, 6, 8]
    info = agent.infos[0]
    assert info.task is task and info.trial == 3 and info.seed == 11
    assert info.tools == TOOLS.schemas() and info.policy == tau2_world.policy

    # usage totals and timings
    assert traj.agent_usage == Usage(prompt_tokens=400, completion_tokens=40, compute_s=2.0)
    assert traj.user_usage == Usage(prompt_tokens=15, completion_tokens=3)
    assert traj.messages[0].usage == Usage(prompt_tokens=7)
    assert all(m.latency_s is not None for m in traj.messages if m.role == "assistant")
    assert traj.messages[6].latency_s >= 0.01
    t = traj.timings
    assert t.agent_s >= 0.01 and t.tool_s > 0 and t.user_s >= 0
    assert t.wall_s >= t.agent_s + t.user_s + t.tool_s

    # the world's log and end state
    assert [(e["name"], e["ok"]) for e in traj.world_log] == [
        ("find_user_id_by_email", True),
        ("get_order_details", True),
        ("cancel_pending_order", True),
    ]
    assert traj.world_log[2]["authenticated_user_id"] == SOFIA
    assert traj.final_changed["orders"][SOFIA_ORDER]["status"] == "cancelled"
    assert set(traj.final_changed["orders"]) == {SOFIA_ORDER}
    expected = tau2_world.session(authenticated_user_id=SOFIA)
    execute(expected, "cancel_pending_order", {"order_id": SOFIA_ORDER, "reason": "no longer needed"})
    assert traj.final_hash == expected.state_hash()
    assert tau2_world.db.orders[SOFIA_ORDER].status == "pending"

    # the trajectory is data: it survives a JSON round trip unchanged
    again = Trajectory.model_validate_json(traj.model_dump_json())
    assert again == traj
    assert again.model_dump_json() == traj.model_dump_json()


def test_agent_stop_on_whitespace_or_none(tau2_world, task):
    for content in (None, "   \n"):
        traj = run_episode(tau2_world, task, ScriptedAgent([say(content)]), ScriptedUser([UserReply("hi")]))
        assert traj.termination == "agent_stop"
        assert len(traj.messages) == 2
        assert traj.final_changed == {"products": {}, "users": {}, "orders": {}}
        assert traj.final_hash == tau2_world.session().state_hash()


def test_user_stop(tau2_world, task):
    agent = ScriptedAgent([say("How can I help?")])
    user = ScriptedUser([UserReply("hi"), UserReply("bye ###STOP###", stop=True)])
    traj = run_episode(tau2_world, task, agent, user)
    assert traj.termination == "user_stop"
    assert [m.role for m in traj.messages] == ["user", "assistant", "user"]
    assert traj.messages[-1].content == "bye ###STOP###"


def test_user_stop_at_once(tau2_world, task):
    agent = ScriptedAgent([])
    traj = run_episode(tau2_world, task, agent, ScriptedUser([UserReply("never mind", stop=True)]))
    assert traj.termination == "user_stop"
    assert len(traj.messages) == 1 and agent.seen == []


@pytest.mark.parametrize("max_turns", [1, 2, 5, 6])
def test_turn_limit_by_max_turns(tau2_world, task, max_turns):
    traj = run_episode(
        tau2_world,
        task,
        ScriptedAgent(forever(say("And?"))),
        ScriptedUser(forever(UserReply("Hm."))),
        limits=Limits(max_turns=max_turns),
    )
    assert traj.termination == "turn_limit"
    assert len(traj.messages) == max_turns  # user + assistant messages, never more
    assert [m.role for m in traj.messages] == (["user", "assistant"] * max_turns)[:max_turns]


def test_tool_calls_count_towards_max_turns(tau2_world, task):
    agent = ScriptedAgent(forever(calls(("calculate", {"expression": "1 + 1"}))))
    traj = run_episode(tau2_world, task, agent, ScriptedUser([UserReply("go")]), limits=Limits(max_turns=4))
    assert traj.termination == "turn_limit"
    assert [m.role for m in traj.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]


def test_turn_limit_by_max_tool_calls(tau2_world, task):
    agent = ScriptedAgent(forever(calls(("calculate", {"expression": "2 * 3"}))))
    traj = run_episode(
        tau2_world, task, agent, ScriptedUser([UserReply("go")]), limits=Limits(max_tool_calls=3, max_steps_per_turn=99)
    )
    assert traj.termination == "turn_limit"
    assert len(traj.tool_calls()) == 3
    assert [m.content for m in traj.messages if m.role == "tool"] == ["6.0"] * 3
    assert len(traj.world_log) == 3


def test_turn_limit_by_max_steps_per_turn(tau2_world, task):
    agent = ScriptedAgent(forever(calls(("list_all_product_types", {}))))
    traj = run_episode(tau2_world, task, agent, ScriptedUser([UserReply("go")]), limits=Limits(max_steps_per_turn=2))
    assert traj.termination == "turn_limit"
    assert len(traj.tool_calls()) == 2


@pytest.mark.parametrize("where", ["agent", "user"])
def test_infrastructure_error_returns_the_trajectory_so_far(tau2_world, task, where):
    boom = InfrastructureError("endpoint returned 503")
    agent_steps = [calls(("find_user_id_by_email", {"email": SOFIA_EMAIL})), say("Found you.")]
    user_steps: list = [UserReply("I am Sofia")]
    if where == "agent":
        agent_steps[1] = boom
    else:
        user_steps.append(boom)
    traj = run_episode(tau2_world, task, ScriptedAgent(agent_steps), ScriptedUser(user_steps))
    assert traj.termination == "infra_error" and traj.infra_error
    assert traj.error == "endpoint returned 503"
    assert [m.role for m in traj.messages][:3] == ["user", "assistant", "tool"]
    assert traj.world_log[0]["name"] == "find_user_id_by_email" and traj.world_log[0]["ok"]
    assert traj.final_hash == tau2_world.session().state_hash()  # a look-up changes nothing
    assert traj.timings.wall_s > 0
    assert Trajectory.model_validate_json(traj.model_dump_json()) == traj


def test_infrastructure_error_at_start(tau2_world, task):
    class BrokenAgent(ScriptedAgent):
        def start(self, info):
            raise InfrastructureError("model server unreachable")

    traj = run_episode(tau2_world, task, BrokenAgent([]), ScriptedUser([UserReply("hi")]))
    assert traj.termination == "infra_error"
    assert traj.error == "model server unreachable"
    assert traj.messages == []


def test_malformed_tool_calls_become_tool_errors_and_the_episode_continues(tau2_world, task):
    agent = ScriptedAgent(
        [
            calls(ToolCall(id="bad_json", name="get_order_details", arguments=None, raw_arguments='{"order_id": #W59')),
            calls(("refund_everything", {"order_id": SOFIA_ORDER})),
            calls(("get_order_details", {"order_id": 5918442})),
            calls(("find_user_id_by_email", {})),
            calls(("find_user_id_by_email", {"email": SOFIA_EMAIL, "pin": "1234"})),
            calls(("find_user_id_by_email", {"email": SOFIA_EMAIL})),
            say("Found you."),
            say(""),
        ]
    )
    traj = run_episode(tau2_world, task, agent, ScriptedUser([UserReply("hi"), UserReply("ok")]))
    assert traj.termination == "agent_stop"
    tool_msgs = [m for m in traj.messages if m.role == "tool"]
    assert [m.error for m in tool_msgs] == [True, True, True, True, True, False]
    assert all(m.content.startswith("Error: ") for m in tool_msgs[:5])
    assert '{"order_id": #W59' in tool_msgs[0].content and "JSON object" in tool_msgs[0].content
    assert "unknown tool 'refund_everything'" in tool_msgs[1].content
    assert "order_id" in tool_msgs[2].content
    assert "email: Field required" in tool_msgs[3].content
    assert "pin" in tool_msgs[4].content
    assert tool_msgs[5].content == SOFIA
    assert [m.tool_call_id for m in tool_msgs][0] == "bad_json"
    assert traj.world_log[0]["kind"] == "read"  # an unparsable call keeps its tool's kind
    assert [(e["name"], e["ok"], e["error_category"]) for e in traj.world_log] == [
        ("get_order_details", False, "malformed_arguments"),
        ("refund_everything", False, "invalid_arguments"),
        ("get_order_details", False, "invalid_arguments"),
        ("find_user_id_by_email", False, "invalid_arguments"),
        ("find_user_id_by_email", False, "invalid_arguments"),
        ("find_user_id_by_email", True, None),
    ]
    assert [e["step"] for e in traj.world_log] == list(range(6))
    assert traj.final_hash == tau2_world.session().state_hash()


def test_refused_write_is_a_tool_error_not_a_crash(tau2_world, task):
    agent = ScriptedAgent(
        [calls(("cancel_pending_order", {"order_id": SOFIA_ORDER, "reason": "no longer needed"})), say("")]
    )
    traj = run_episode(tau2_world, task, agent, ScriptedUser([UserReply("cancel it")]))
    tool = next(m for m in traj.messages if m.role == "tool")
    assert tool.error and "no customer is authenticated" in tool.content
    assert traj.world_log[0]["error_category"] == "unauthorized"
    assert traj.final_changed["orders"] == {}


def test_a_given_session_is_used_and_left_with_the_episode_state(tau2_world, task):
    session = tau2_world.session(authenticated_user_id=SOFIA)
    agent = ScriptedAgent(
        [calls(("modify_pending_order_payment", {"order_id": SOFIA_ORDER, "payment_method_id": "paypal_0"})), say("")]
    )
    traj = run_episode(tau2_world, task, agent, ScriptedUser([UserReply("pay with paypal")]), session=session)
    assert len(session.log) == 1 and traj.world_log == [session.log[0].to_dict()]
    assert traj.world_log[0]["error_category"] == "not_found"
    assert traj.final_hash == session.state_hash()


def test_two_episodes_on_one_world_are_isolated(tau2_world, task):
    def cancel_agent():
        return ScriptedAgent(
            [
                calls(("find_user_id_by_email", {"email": SOFIA_EMAIL})),
                calls(("cancel_pending_order", {"order_id": SOFIA_ORDER, "reason": "ordered by mistake"})),
                say(""),
            ]
        )

    first = run_episode(tau2_world, task, cancel_agent(), ScriptedUser([UserReply("cancel")]))
    second = run_episode(tau2_world, task, cancel_agent(), ScriptedUser([UserReply("cancel")]))
    assert first.final_hash == second.final_hash
    assert [e["ok"] for e in second.world_log] == [True, True]  # the second saw a pending order, not a cancelled one


def test_one_message_past_the_budget_runs_only_the_budget(tau2_world, task):
    from pipeline.grading.grader import grade
    from pipeline.rollout.runner import NOT_RUN

    cancel = ("cancel_pending_order", {"order_id": SOFIA_ORDER, "reason": "no longer needed"})
    agent = ScriptedAgent([calls(*[cancel] * 10_000), say("Done.")])
    session = tau2_world.session(authenticated_user_id=SOFIA)
    t0 = time.perf_counter()
    traj = run_episode(tau2_world, task, agent, ScriptedUser([UserReply("go")]), session=session)
    assert time.perf_counter() - t0 < 10
    assert traj.termination == "turn_limit" and len(session.log) == len(traj.world_log) == 30
    tool = [m for m in traj.messages if m.role == "tool"]
    assert len(tool) == 10_000 and all(m.error for m in tool[30:])
    assert [m.content for m in tool[30:]] == [NOT_RUN] * 9_970
    verdict = grade(tau2_world, task, traj, authenticated_user_id=SOFIA)
    assert verdict.component("replay_consistency").passed
    budget = verdict.component("static.tool_budget").details
    assert budget == ["10000 tool calls exceed the budget of 30 (9970 not run)"]


def test_not_run_marks_within_the_budget_are_flagged(tau2_world, task):
    from pipeline.grading.grader import grade
    from pipeline.rollout.runner import NOT_RUN

    agent = ScriptedAgent([calls(("calculate", {"expression": "1 + 1"})), say("Done.")])
    traj = run_episode(tau2_world, task, agent, ScriptedUser([UserReply("go"), UserReply("bye", stop=True)]))
    forged = traj.model_copy(deep=True)
    next(m for m in forged.messages if m.role == "tool").content = NOT_RUN
    forged.world_log, forged.final_hash = [], ""
    verdict = grade(tau2_world, task, forged)
    assert "tool calls recorded as not run within the budget" in verdict.component("static.tool_budget").details[0]
