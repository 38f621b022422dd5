"""`agentloop serve` returns the prompt's and the completion's token ids when a request asks `return_token_ids: true`
(vLLM's field, which the model proxy asks for), and answers exactly as before when it does not."""

from __future__ import annotations

from fastapi.testclient import TestClient

from pipeline.rollout import Message
from pipeline.serve import create_app
from pipeline.serve.engine import Generation

REQUEST = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}


class FakeEngine:
    name, context = "fake", 4096

    def generate(self, messages, tools, policy, params) -> Generation:
        return Generation(Message(role="assistant", content="hello"), 3, 2, "stop", [1, 2, 3], [7, 0])


class SilentEngine(FakeEngine):
    def generate(self, messages, tools, policy, params) -> Generation:
        return Generation(Message(role="assistant", content="hello"), 3, 2, "stop")


def test_ids_only_when_asked():
    client = TestClient(create_app(FakeEngine()))
    plain = client.post("/v1/chat/completions", json=REQUEST).json()
    assert "prompt_token_ids" not in plain and "token_ids" not in plain["choices"][0]
    assert plain["choices"][0]["message"] == {"role": "assistant", "content": "hello", "tool_calls": None}
    asked = client.post("/v1/chat/completions", json={**REQUEST, "return_token_ids": True}).json()
    assert asked["prompt_token_ids"] == [1, 2, 3] and asked["choices"][0]["token_ids"] == [7, 0]
    assert asked["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def test_an_engine_without_ids_answers_without_them():
    client = TestClient(create_app(SilentEngine()))
    asked = client.post("/v1/chat/completions", json={**REQUEST, "return_token_ids": True}).json()
    assert "prompt_token_ids" not in asked and "token_ids" not in asked["choices"][0]
