"""`agentloop serve` answers the traffic τ²-bench's runner sends through litellm's OpenAI-style chat API, driven
by the official `openai` client against a real served model (the tiny checkpoint of test_serve): the domain's tool
schemas in, `tool_calls` out, tool results back in with their `tool_call_id`, several turns; litellm's message
shapes (the agent's greeting first, `tool_calls: null` on plain replies, the call's name repeated beside its
`function`, tool results without a name) are accepted as they come."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pipeline.agents.checkpoint import ModelConfig
from pipeline.domains.retail.tools import TOOLS
from pipeline.rollout.trajectory import Message, ToolCall
from pipeline.world.registry import load_world
from pipeline.world.tools import execute
from tests.serve.fitted import fitted_checkpoint
from tests.serve.test_serve import WORLD, free_port
from tests.server_process import wait_until_up

pytestmark = pytest.mark.slow
GREETING = "Hi! How can I help you today?"  # τ²-bench's agent opens every conversation with a greeting
OPENING = "Hi, I want to cancel an order."
VERIFIED = "Thank you, you are verified. Which order is it?"
USER_LINES = ["Thanks, that's all."]
GOODBYE = "Goodbye!"
SMALL = ModelConfig(hidden_size=64, intermediate_size=128, num_layers=2, num_heads=2, max_position_embeddings=2048)


@pytest.fixture(scope="module")
def world():
    return load_world(WORLD)


def _conversation(world) -> list[Message]:
    """The τ²-shaped conversation the tiny model learns: greeting, a look-up call, its result, two replies."""
    email = next(iter(world.db.users.values())).email
    user_id = execute(world.session(), "find_user_id_by_email", {"email": email}).content
    call = ToolCall(id="call_0", name="find_user_id_by_email", arguments={"email": email})
    return [
        Message(role="assistant", content=GREETING),
        Message(role="user", content=OPENING),
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", content=user_id, tool_call_id="call_0", name="find_user_id_by_email"),
        Message(role="assistant", content=VERIFIED),
        Message(role="user", content=USER_LINES[0]),
        Message(role="assistant", content=GOODBYE),
    ]


@pytest.fixture(scope="module")
def server(tmp_path_factory, world):
    path = fitted_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny", world, _conversation(world), SMALL, 150, 1e-2)
    port = free_port()
    cmd = [sys.executable, "-m", "pipeline.cli", "serve", "--model", str(path), "--port", str(port), "--name", "tiny"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ})
    url = f"http://127.0.0.1:{port}"
    wait_until_up(proc, f"{url}/health", 90, "agentloop serve")
    yield url + "/v1"
    proc.terminate()
    proc.wait(timeout=20)


def _assistant_entry(message) -> dict:
    """The assistant turn as litellm sends it back in the next request."""
    calls = None
    if message.tool_calls:
        calls = [
            {
                "id": c.id,
                "type": "function",
                "name": c.function.name,
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in message.tool_calls
        ]
    return {"role": "assistant", "content": message.content, "tool_calls": calls}


def test_tau2_runner_traffic_through_the_openai_client(world, server):
    from openai import OpenAI

    client = OpenAI(base_url=server, api_key="unused", max_retries=0, timeout=60)
    tools = [{"type": "function", "function": s["function"]} for s in TOOLS.schemas()]
    session = world.session()
    messages: list[dict] = [
        {"role": "system", "content": world.policy},
        {"role": "assistant", "content": GREETING, "tool_calls": None},
        {"role": "user", "content": OPENING},
    ]
    lines = iter(USER_LINES)
    calls_made, tool_results_sent, completions = [], 0, 0
    while completions < 6:
        response = client.chat.completions.create(
            model="tiny", messages=messages, tools=tools, tool_choice="auto", temperature=0.0, max_tokens=96
        )
        completions += 1
        assert response.object == "chat.completion" and len(response.choices) == 1
        assert response.usage.prompt_tokens > 0
        choice = response.choices[0]
        message = choice.message
        messages.append(_assistant_entry(message))
        if message.tool_calls:
            assert choice.finish_reason == "tool_calls"
            for call in message.tool_calls:
                assert call.type == "function" and call.id
                calls_made.append(call)
                try:
                    arguments = json.loads(call.function.arguments)
                except json.JSONDecodeError:
                    arguments = None
                if isinstance(arguments, dict):
                    content = execute(session, call.function.name, arguments).content
                else:
                    content = f"Error: arguments are not a JSON object: {call.function.arguments!r}"
                messages.append({"role": "tool", "content": content, "tool_call_id": call.id})
                tool_results_sent += 1
            continue
        line = next(lines, None)
        if line is None:
            break
        messages.append({"role": "user", "content": line})
    # three turns, each request carrying the whole history: the call, the reply to its result, the goodbye
    assert completions == 3 and tool_results_sent == 1
    (call,) = calls_made
    assert call.function.name == "find_user_id_by_email"
    assert json.loads(call.function.arguments) == {"email": next(iter(world.db.users.values())).email}
    assert session.log[0].name == "find_user_id_by_email" and session.log[0].ok
    said = [m["content"] for m in messages if m["role"] == "assistant" and not m["tool_calls"]]
    assert said == [GREETING, VERIFIED, GOODBYE]  # the answer to the tool result, then to the last user line
