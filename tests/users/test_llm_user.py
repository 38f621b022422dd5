"""The LLM customer over a fake endpoint: the task's script as its scenario, the persona's tone, flipped roles,
the stop token, its usage kept apart from the agent's, and a silent simulator treated as an infrastructure
error."""

from __future__ import annotations

import pytest

from pipeline.agents.backends.openai import OpenAIAgent
from pipeline.authoring.templates import generate_tasks
from pipeline.endpoint.client import ChatClient, EndpointConfig
from pipeline.grading.grader import grade
from pipeline.rollout.runner import run_episode
from pipeline.rollout.trajectory import STOP_TOKEN, Message, ToolCall
from pipeline.users.llm import OPENING, PERSONA_STYLE, LLMUser, scenario_text, simulator_messages
from pipeline.users.registry import UnknownUserError, make_user
from pipeline.world.registry import load_world
from tests.agents.fake_openai import FakeOpenAI, Reply, completion


@pytest.fixture(scope="module")
def world():
    return load_world("gen-3-8x20x40")


@pytest.fixture(scope="module")
def tasks(world):
    return generate_tasks(world, 3, seed=2)


def client(url: str) -> ChatClient:
    return ChatClient(EndpointConfig(base_url=url, timeout_s=5, max_retries=1, backoff_s=0.01))


def test_scenario_is_the_user_script(tasks):
    forgot = tasks[0].user_script  # forgot_email: the address must not be handed to the simulator
    text = scenario_text(forgot)
    assert forgot.goal in text and "#W0007785" in text and "It was ordered by mistake." in text
    assert forgot.known.email not in text and "do not remember your email" in text
    assert forgot.known.zip in text and "Diego" in text
    assert tasks[1].user_script.known.email in scenario_text(tasks[1].user_script)


def test_roles_are_flipped_and_tool_traffic_hidden():
    call = ToolCall(id="c", name="get_order_details", arguments={"order_id": "#W1"})
    convo = [
        Message(role="user", content="Cancel #W1."),
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", content="{}", tool_call_id="c"),
        Message(role="assistant", content="Why?"),
    ]
    assert simulator_messages("S", []) == [{"role": "system", "content": "S"}, {"role": "user", "content": OPENING}]
    assert simulator_messages("S", convo)[1:] == [
        {"role": "assistant", "content": "Cancel #W1."},
        {"role": "user", "content": "Why?"},
    ]


def test_an_llm_user_plays_an_episode_with_separate_usage(world, tasks):
    task = tasks[1]
    user_lines = iter(["I need to change the shipping address of order #W0007785.", f"Thanks, bye! {STOP_TOKEN}"])

    def answer(body: dict) -> Reply:
        if body["model"] == "customer":
            return completion(next(user_lines), prompt_tokens=300, completion_tokens=20)
        return completion("Sure, what is your email?", prompt_tokens=1000, completion_tokens=8)

    with FakeOpenAI(default=answer) as fake:
        user = LLMUser("customer", client(fake.base_url), temperature=0.3)
        traj = run_episode(world, task, OpenAIAgent("agent", client(fake.base_url)), user, trial=1)
    assert traj.termination == "user_stop" and traj.user == "llm:customer"
    said = [m.content for m in traj.messages if m.role == "user"]
    assert said[0].startswith("I need to change") and said[-1].endswith(STOP_TOKEN)
    assert (traj.user_usage.prompt_tokens, traj.user_usage.completion_tokens) == (600, 40)
    assert (traj.agent_usage.prompt_tokens, traj.agent_usage.completion_tokens) == (1000, 8)
    sim = [r for r in fake.requests if r["model"] == "customer"]
    system = sim[0]["messages"][0]["content"]
    assert task.user_script.goal in system and PERSONA_STYLE[traj.persona] in system and STOP_TOKEN in system
    assert sim[1]["messages"][-1] == {"role": "user", "content": "Sure, what is your email?"}
    assert sim[0]["temperature"] == 0.3 and "tools" not in sim[0]


def test_a_silent_simulator_is_an_infrastructure_error(world, tasks):
    with FakeOpenAI(default=lambda body: completion("   ")) as fake:
        traj = run_episode(
            world, tasks[0], OpenAIAgent("a", client(fake.base_url)), LLMUser("u", client(fake.base_url))
        )
    assert traj.termination == "infra_error" and "empty message" in traj.error
    assert grade(world, tasks[0], traj).infra_error


def test_turn_cap_ends_the_conversation(world, tasks):
    with FakeOpenAI(default=lambda body: completion("Hello?")) as fake:
        traj = run_episode(
            world, tasks[0], OpenAIAgent("a", client(fake.base_url)), LLMUser("u", client(fake.base_url), max_turns=3)
        )
    assert traj.termination == "user_stop" and traj.messages[-1].content == f"Hello? {STOP_TOKEN}"
    assert sum(1 for m in traj.messages if m.role == "user") == 3


def test_user_specs(monkeypatch):
    monkeypatch.setenv("AGENTLOOP_USER_BASE_URL", "http://127.0.0.1:9/v1")
    user = make_user("llm:gpt-x,temperature=0.7,max_turns=12")
    assert (user.name, user.temperature, user.max_turns) == ("llm:gpt-x", 0.7, 12)
    assert user.client.config.base_url == "http://127.0.0.1:9/v1"
    assert make_user("scripted").name == "scripted-user"
    with pytest.raises(UnknownUserError, match="unknown setting"):
        make_user("llm:gpt-x,colour=2")
    with pytest.raises(UnknownUserError, match="expected scripted, llm:MODEL or tau2-llm:MODEL"):
        make_user("robot")


def test_measure_records_user_usage_apart(tasks, tmp_path, monkeypatch):
    from pipeline.dataset.io import write_tasks
    from pipeline.measure import MeasureConfig, measure

    def answer(body: dict) -> Reply:
        if body["model"] == "customer":
            first = len(body["messages"]) == 2  # system + the opening cue
            return completion("Cancel my order." if first else f"Never mind, bye. {STOP_TOKEN}", prompt_tokens=50)
        return completion("Which order?", prompt_tokens=70, completion_tokens=3)

    path = tmp_path / "tasks.jsonl"
    write_tasks(path, tasks[:2])
    with FakeOpenAI(default=answer) as fake:
        monkeypatch.setenv("AGENTLOOP_BASE_URL", fake.base_url)
        cfg = MeasureConfig(
            world="gen-3-8x20x40", tasks=path, agent="openai:agent", user="llm:customer", trials=2, resamples=50
        )
        summary = measure(cfg, tmp_path / "run")
    assert summary.valid_trials == 4
    import json

    usage = json.loads((tmp_path / "run" / "usage.json").read_text())
    assert usage["user"]["name"] == "llm:customer" and usage["user"]["prompt_tokens"] == 4 * 2 * 50
    assert usage["agent"]["name"] == "openai:agent" and usage["agent"]["prompt_tokens"] == 4 * 70
