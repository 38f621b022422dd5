"""The two framework examples (OpenAI Agents SDK, pydantic-ai) run offline for real: the episode's tools are an
in-memory retail world served with `mcp_app`, the model a scripted OpenAI-compatible server (tool calls, then a final
text) behind the model proxy, so each framework's own tool loop runs: tool call → MCP → result → model → reply. The
environment executed the calls, the proxy recorded the framework's calls with the tool results it sent back, and the
reply came back; a second turn carries the first in its history."""

from __future__ import annotations

import importlib
import json

import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from pipeline.environment import Environment, mcp_app
from pipeline.programs.proxy import ModelProxy
from pipeline.protocol import AgentProgram, ProgramEpisode
from tests.needs import need_module
from tests.programs.scripted_model import MODEL, ScriptedModel, text, tool_call
from tests.programs.serving import Served

EMAIL, USER = "olivia.schmidt0685@example.com", "olivia_schmidt_0627"
EXAMPLES = {
    "openai_agents_program:OpenAIAgentsProgram": "agents",
    "pydantic_ai_program:PydanticAIProgram": "pydantic_ai",
}


def factory(spec: str):
    module, name = spec.split(":")
    need_module(EXAMPLES[spec], install="pip install -e '.[programs]'")
    return getattr(importlib.import_module(f"examples.programs.{module}"), name)


@pytest.fixture
def tools():
    episodes: dict[str, Environment] = {}
    app = Starlette(routes=[Route("/episodes/{episode_id}/mcp", mcp_app(episodes.get))])
    with Served(app) as served:
        yield served, episodes


def tool_messages(messages: list[dict]) -> list[dict]:
    return [m for m in messages if m.get("role") == "tool"]


@pytest.mark.parametrize("spec", sorted(EXAMPLES))
def test_the_frameworks_tool_loop_runs_through_mcp_and_the_proxy(spec, tools):
    make = factory(spec)
    served, episodes = tools
    env = Environment("retail", "gen-3")
    env.init()
    episodes["ep"] = env
    script = [
        tool_call("find_user_id_by_email", {"email": EMAIL}),
        text(f"Your user id is {USER}."),
        tool_call("get_user_details", {"user_id": USER}),
        text("Your details are on file."),
    ]
    with ScriptedModel(script) as model, ModelProxy(model.base_url) as proxy:
        episode = ProgramEpisode(
            mcp_url=f"{served.url}/episodes/ep/mcp",
            policy="You are a retail support agent.",
            model_base_url=proxy.open("ep"),
            model=MODEL,
            task_id="t1",
        )
        program = make()
        assert isinstance(program, AgentProgram)
        program.start(episode)
        try:
            assert program.respond(f"Hi, my email is {EMAIL}.") == f"Your user id is {USER}."
            assert program.respond("What do you have on me?") == "Your details are on file."
        finally:
            program.close()
        calls = proxy.close("ep").calls

    assert [(c.name, c.arguments) for c in env.calls()] == [
        ("find_user_id_by_email", {"email": EMAIL}),
        ("get_user_details", {"user_id": USER}),
    ]
    assert len(calls) == 4 and all(c.status == 200 for c in calls)
    first, second, third, fourth = calls
    names = {t["function"]["name"] for t in first.tools or []}
    assert {"find_user_id_by_email", "get_user_details"} <= names  # the MCP tools, as the framework declared them
    assert any("retail support agent" in json.dumps(m) for m in first.messages)  # the policy as its instructions
    (result,) = tool_messages(second.messages)  # the framework sent the tool's output back to the model
    assert USER in json.dumps(result["content"]) and result["tool_call_id"] == first.tool_calls[0]["id"]
    assert any(EMAIL in json.dumps(m) for m in third.messages)  # the second turn carries the first
    assert len(tool_messages(fourth.messages)) == 2


@pytest.fixture(scope="module")
def served_checkpoint(tmp_path_factory):
    """`agentloop serve`'s app over a tiny random checkpoint fitted to say one line, served by uvicorn."""
    from pipeline.agents.checkpoint import ModelConfig
    from pipeline.rollout import Message
    from pipeline.serve import create_app, load_engine
    from pipeline.world.registry import load_world
    from tests.serve.fitted import fitted_checkpoint

    tiny = ModelConfig(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, max_position_embeddings=4096)
    convo = [Message(role="user", content="hi"), Message(role="assistant", content="Hello, how can I help?")]
    path = fitted_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny", load_world("gen-3"), convo, tiny)
    with Served(create_app(load_engine(path, name="tiny"), default_max_tokens=24)) as served:
        yield f"{served.url}/v1"


@pytest.mark.slow
@pytest.mark.parametrize("spec", sorted(EXAMPLES))
def test_the_examples_talk_to_agentloop_serve_through_the_proxy(spec, tools, served_checkpoint):
    """A tiny model calls no tool sensibly: this proves the wire (framework → proxy → `agentloop serve` → reply)."""
    make = factory(spec)
    served, episodes = tools
    env = Environment("retail", "gen-3")
    env.init()
    episodes["ep"] = env
    with ModelProxy(served_checkpoint) as proxy:
        episode = ProgramEpisode(
            mcp_url=f"{served.url}/episodes/ep/mcp",
            policy="You are a retail support agent.",
            model_base_url=proxy.open("ep"),
            model="tiny",
            task_id="t1",
        )
        program = make()
        program.start(episode)
        try:
            reply = program.respond("hi")
        finally:
            program.close()
        record = proxy.close("ep")
    assert reply == "Hello, how can I help?" and record.failures == []  # the line it was fitted to say
    assert record.calls and all(c.status == 200 for c in record.calls), [c.error for c in record.calls]
    first = record.calls[0]
    assert first.model == "tiny" and first.usage is not None and first.usage.prompt_tokens > 0
    assert first.tools and first.message is not None
    # agentloop serve answers the proxy's `return_token_ids`: exactly the ids it rendered and sampled
    assert first.token_ids is not None and len(first.token_ids) == first.usage.completion_tokens
    assert first.prompt_token_ids is not None and len(first.prompt_token_ids) == first.usage.prompt_tokens


def test_the_docs_show_the_examples_as_they_are():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    docs = (root / "docs" / "programs.md").read_text(encoding="utf-8")
    for spec in EXAMPLES:
        module = spec.split(":")[0]
        code = (root / "examples" / "programs" / f"{module}.py").read_text(encoding="utf-8")
        assert f"```python\n{code}```" in docs, f"docs/programs.md: {module}.py is not shown as it is"
        assert len(code.splitlines()) <= 30, f"{module}.py: an example is at most 30 lines"


@pytest.fixture(scope="module")
def llama_cpp_server(tmp_path_factory):
    """llama.cpp's OpenAI-compatible server (`llama_cpp.server`) with SmolLM2-135M-Instruct, on 127.0.0.1."""
    from tests.agents.smollm2 import llama_cpp_server as serving

    yield from serving(tmp_path_factory.mktemp("llama"))


@pytest.mark.slow
def test_the_agents_sdk_example_talks_to_llama_cpp_through_the_proxy(tools, llama_cpp_server):
    """SmolLM2 behind llama.cpp's server: the framework's calls reach it through the proxy and its reply comes back
    (what the model says is its own; llama-cpp-python returns no token ids, and ignores the fields asking for them)."""
    make = factory("openai_agents_program:OpenAIAgentsProgram")
    served, episodes = tools
    env = Environment("retail", "gen-3")
    env.init()
    episodes["ep"] = env
    with ModelProxy(llama_cpp_server) as proxy:
        program = make()
        program.start(
            ProgramEpisode(
                mcp_url=f"{served.url}/episodes/ep/mcp",
                policy="You are a retail support agent.",
                model_base_url=proxy.open("ep"),
                model="smollm2",
                task_id="t1",
            )
        )
        try:
            reply = program.respond("Hi, what can you do for me?")
        finally:
            program.close()
        record = proxy.close("ep")
    assert isinstance(reply, str) and record.failures == []
    assert record.calls and all(c.status == 200 and c.usage is not None for c in record.calls)
    assert record.calls[0].tools and record.calls[0].model == "smollm2"
