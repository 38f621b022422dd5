"""The `openai` backend against a fake endpoint on loopback: the wire format both ways, usage, retries with
backoff for 5xx / 429 / stalls / torn bodies, and what reaches the grader when the endpoint misbehaves."""

from __future__ import annotations

import json
import pickle
import socket
import time

import pytest

from pipeline.agents.backends.openai import OpenAIAgent, SamplingConfig
from pipeline.agents.registry import UnknownAgentError, make_agent
from pipeline.authoring.templates import generate_tasks
from pipeline.domains.retail.tools import TOOLS
from pipeline.domains.retail.worlds import generate_world
from pipeline.endpoint.client import ChatClient, EndpointConfig, ReplyTimeoutError
from pipeline.endpoint.wire import message_from_openai, message_to_openai, to_openai_messages
from pipeline.grading.grader import grade
from pipeline.rollout.protocols import EpisodeInfo, InfrastructureError
from pipeline.rollout.runner import Limits, run_episode
from pipeline.rollout.trajectory import Message, ToolCall
from pipeline.trials.executor import SerialExecutor
from pipeline.users.scripted import ScriptedUser
from tests.agents.fake_openai import FakeOpenAI, Reply, completion, tool_call


@pytest.fixture(scope="module")
def world():
    return generate_world(seed=3, n_products=8, n_users=20, n_orders=40)


@pytest.fixture(scope="module")
def task(world):
    return generate_tasks(world, 1, seed=2)[0]


def client(url: str, sleeps: list | None = None, **cfg) -> ChatClient:
    settings = {
        "base_url": url,
        "api_key": "sk-test",
        "timeout_s": 2.0,
        "max_retries": 3,
        "backoff_s": 0.01,
        "backoff_cap_s": 0.04,
        **cfg,
    }
    return ChatClient(EndpointConfig(**settings), sleep=(sleeps.append if sleeps is not None else time.sleep))


def info(world, task) -> EpisodeInfo:
    return EpisodeInfo(task=task, trial=0, seed=5, policy=world.policy, tools=TOOLS.schemas())


def test_messages_map_both_ways():
    convo = [
        Message(role="user", content="Cancel order #W1."),
        Message(
            role="assistant",
            content=None,
            tool_calls=[
                ToolCall(
                    id="c0",
                    name="get_order_details",
                    arguments={"order_id": "#W1"},
                    raw_arguments='{"order_id": "#W1"}',
                ),
                ToolCall(id="c1", name="cancel_pending_order", arguments=None, raw_arguments='{"order_id": '),
            ],
        ),
        Message(role="tool", content='{"status": "pending"}', tool_call_id="c0", name="get_order_details"),
        Message(role="assistant", content="Done."),
    ]
    wire = to_openai_messages(convo, system="POLICY")
    assert wire[0] == {"role": "system", "content": "POLICY"}
    assert wire[2]["tool_calls"][1]["function"]["arguments"] == '{"order_id": '
    assert wire[3] == {
        "role": "tool",
        "content": '{"status": "pending"}',
        "tool_call_id": "c0",
        "name": "get_order_details",
    }
    back = [message_from_openai(json.loads(json.dumps(m))) for m in wire[1:]]
    assert back == convo
    assert message_to_openai(back[1])["tool_calls"][0]["function"] == {
        "name": "get_order_details",
        "arguments": '{"order_id": "#W1"}',
    }


def test_text_tool_calls_are_read_by_the_codec():
    text = 'Let me look.\n<tool_call>\n{"name": "get_order_details", "arguments": {"order_id": "#W2"}}\n</tool_call>'
    msg = message_from_openai({"role": "assistant", "content": text}, id_prefix="call_3_")
    assert msg.content == "Let me look."
    assert msg.tool_calls == [
        ToolCall(
            id="call_3_0", name="get_order_details", arguments={"order_id": "#W2"}, raw_arguments='{"order_id": "#W2"}'
        )
    ]


def test_agent_sends_policy_tools_seed_and_records_usage(world, task):
    replies = [
        completion(None, [tool_call("find_user_id_by_email", '{"email": "a@b.c"}')], 120, 9, "tool_calls"),
        completion("How can I help?", None, 140, 5),
    ]
    with FakeOpenAI(replies) as fake:
        agent = OpenAIAgent("m1", client(fake.base_url), SamplingConfig(temperature=0.5, max_tokens=64, seed=1))
        ep = agent.start(info(world, task))
        first = ep.act([Message(role="user", content="hi")])
        second = ep.act([Message(role="user", content="hi"), first])
    body = fake.requests[0]
    assert body["model"] == "m1" and body["messages"][0] == {"role": "system", "content": world.policy}
    assert body["tools"] == TOOLS.schemas() and body["temperature"] == 0.5 and body["max_tokens"] == 64
    assert body["seed"] != fake.requests[1]["seed"]  # per turn
    assert fake.headers[0]["authorization"] == "Bearer sk-test"
    assert first.tool_calls[0].arguments == {"email": "a@b.c"} and first.tool_calls[0].id == "call_x"
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (120, 9) and first.latency_s > 0
    assert second.content == "How can I help?" and second.tool_calls == []
    assert fake.requests[1]["messages"][-1]["tool_calls"][0]["function"]["name"] == "find_user_id_by_email"


def test_5xx_and_torn_bodies_are_retried_with_capped_backoff():
    sleeps: list[float] = []
    replies = [
        Reply(500, {"error": "boom"}),
        Reply(503),
        Reply(200, '{"choices": [{"mess'),
        Reply(502),
        completion("ok"),
    ]
    with FakeOpenAI(replies) as fake:
        out = client(fake.base_url, sleeps, max_retries=5).complete({"model": "m", "messages": []})
    assert out.message["content"] == "ok" and out.attempts == 5 and len(fake.requests) == 5
    assert len(sleeps) == 4 and all(0 < s <= 0.04 for s in sleeps)
    assert sleeps[0] <= 0.01 and sleeps[3] >= 0.02  # doubles up to the cap (with jitter in [0.5, 1])


def test_rate_limit_waits_for_retry_after_within_the_cap():
    sleeps: list[float] = []
    with FakeOpenAI([Reply(429, {"error": "slow down"}, headers={"Retry-After": "30"}), completion("ok")]) as fake:
        out = client(fake.base_url, sleeps, backoff_cap_s=0.2).complete({"model": "m", "messages": []})
    assert out.attempts == 2 and sleeps == [0.2]


def test_gives_up_after_the_cap_with_an_infrastructure_error():
    with (
        FakeOpenAI(default=lambda body: Reply(500, {"error": "down"})) as fake,
        pytest.raises(InfrastructureError, match="gave up after 4 attempts; last: HTTP 500"),
    ):
        client(fake.base_url).complete({"model": "m", "messages": []})
    assert len(fake.requests) == 4


def test_a_stalled_endpoint_times_out_and_is_retried_when_resending_is_asked_for():
    with FakeOpenAI([Reply(delay_s=4.0), completion("late but fine")]) as fake:
        t0 = time.perf_counter()
        out = client(fake.base_url, timeout_s=1.0, resend_timed_out=True).complete({"model": "m", "messages": []})
    assert out.message["content"] == "late but fine" and out.attempts == 2
    assert time.perf_counter() - t0 < 3.5
    with (
        FakeOpenAI(default=lambda body: Reply(delay_s=1.0)) as fake,
        pytest.raises(InfrastructureError, match="timed out after 0.2s"),
    ):
        client(fake.base_url, timeout_s=0.2, max_retries=1, resend_timed_out=True).complete(
            {"model": "m", "messages": []}
        )


def test_a_delivered_request_that_times_out_is_not_resent():
    """A server up and generating at length (the request delivered, no reply in time): sending it again would
    only generate it again, so the call fails at once, naming the bounds; a server that is down is retried."""
    with FakeOpenAI([completion("warm")], default=lambda body: Reply(delay_s=4.0)) as fake:
        slow = client(fake.base_url, timeout_s=1.0, max_retries=5)
        assert slow.complete({"model": "m", "messages": []}).message["content"] == "warm"  # the SDK client is built
        t0 = time.perf_counter()
        with pytest.raises(ReplyTimeoutError, match=r"timed out after 1s .*delivered.*max_tokens 64.*not resent"):
            slow.complete({"model": "m", "messages": [], "max_tokens": 64})
        assert time.perf_counter() - t0 < 2.5
        time.sleep(2.0)  # time for a resent request to arrive, were there one
        assert len(fake.requests) == 2  # the warm-up and the one slow request
    with socket.socket() as s:  # a port nothing listens on: the server is down, so the call is retried
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    with pytest.raises(InfrastructureError, match="gave up after 3 attempts; last: transport error") as err:
        client(down, timeout_s=0.5, max_retries=2).complete({"model": "m", "messages": []})
    assert not isinstance(err.value, ReplyTimeoutError)


def test_client_errors_are_not_retried():
    with (
        FakeOpenAI(default=lambda body: Reply(401, {"error": "bad key"})) as fake,
        pytest.raises(InfrastructureError, match="HTTP 401"),
    ):
        client(fake.base_url).complete({"model": "m", "messages": []})
    assert len(fake.requests) == 1


def test_context_overflow_ends_the_agent_turn(world, task):
    err = Reply(400, {"error": {"message": "This model's maximum context length is 2048 tokens."}})
    with FakeOpenAI([err]) as fake:
        msg = OpenAIAgent("m", client(fake.base_url)).start(info(world, task)).act([Message(role="user", content="x")])
    assert msg.content is None and msg.tool_calls == []


def test_malformed_tool_json_is_a_tool_error_the_grader_sees(world, task):
    bad = completion(None, [tool_call("find_user_id_by_email", '{"email": "a@b.c"')])
    with FakeOpenAI([bad]) as fake:
        traj = run_episode(world, task, OpenAIAgent("m", client(fake.base_url)), ScriptedUser(), limits=Limits())
    call = traj.messages[1].tool_calls[0]
    assert call.arguments is None and call.raw_arguments == '{"email": "a@b.c"'
    assert traj.messages[2].role == "tool" and traj.messages[2].error
    assert traj.world_log[0]["error_category"] == "malformed_arguments"  # an attempted, malformed call
    verdict = grade(world, task, traj)
    assert not verdict.infra_error and not verdict.passed


def test_a_dead_endpoint_excludes_the_trial_instead_of_failing_it(world, task):
    with FakeOpenAI(default=lambda body: Reply(503)) as fake:
        agent = OpenAIAgent("m", client(fake.base_url, max_retries=1))
        results = list(SerialExecutor(retries=1).run(world, [task], agent, ScriptedUser(), trials=2))
    assert [r.attempts for r in results] == [2, 2]
    assert all(r.trajectory.termination == "infra_error" and r.verdict.infra_error for r in results)
    assert "gave up after 2 attempts" in results[0].trajectory.error
    assert len(fake.requests) == 2 * 2 * 2  # trials × executor attempts × HTTP attempts


def test_agent_specs_and_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "k1")
    monkeypatch.setenv("AGENTLOOP_API_KEY", "k2")
    agent = make_agent("openai:qwen:7b,temperature=0.7,max_tokens=64,seed=3")
    assert agent.name == "openai:qwen:7b" and agent.model == "qwen:7b"
    assert agent.sampling == SamplingConfig(temperature=0.7, max_tokens=64, seed=3)
    assert agent.client.config.base_url == "http://127.0.0.1:1/v1" and agent.client.config.api_key == "k2"
    with pytest.raises(UnknownAgentError, match="temperature"):
        make_agent("openai:m,temperature=-1")
    with pytest.raises(UnknownAgentError, match="colour: Extra inputs"):
        make_agent("openai:m,colour=1")
    copy = pickle.loads(pickle.dumps(agent))  # Ray ships agents to its workers
    assert copy.client.config == agent.client.config and copy.sampling == agent.sampling
