"""Hostile or malformed traffic at `agentloop serve`: clear 4xx errors in OpenAI's shape, and nothing that cannot
fit reaches the generation slot (an engine that counts its calls stands in for the model)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from pipeline.rollout.trajectory import Message
from pipeline.serve import create_app
from pipeline.serve.engine import Generation
from pipeline.serve.guard import fewest_prompt_tokens, max_token_bytes

TOOL = {
    "type": "function",
    "function": {
        "name": "get_order_details",
        "description": "Look up an order.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
    },
}


class CountingEngine:
    name = "fake"
    context = 1024
    max_token_bytes = 16

    def __init__(self) -> None:
        self.calls: list[tuple[list[Message], list[dict]]] = []

    def generate(self, messages, tools, policy, params) -> Generation:
        self.calls.append((messages, tools))
        return Generation(Message(role="assistant", content="ok"), 10, 1, "stop")


@pytest.fixture
def engine():
    return CountingEngine()


def post(http, body, **kw):
    return http.post("/v1/chat/completions", json=body, **kw)


def body(messages=None, **extra):
    return {"model": "fake", "messages": messages or [{"role": "user", "content": "hi"}], **extra}


def error(r, status: int) -> dict:
    assert r.status_code == status, (r.status_code, r.text)
    return r.json()["error"]


def test_a_well_formed_request_still_works(engine):
    with TestClient(create_app(engine)) as http:
        history = [
            {"role": "user", "content": "where is my order?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_order_details", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "{}"},
            {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
        ]
        r = post(http, body(history, tools=[TOOL]))
    assert r.status_code == 200, r.text
    messages, tools = engine.calls[0]
    assert [m.role for m in messages] == ["user", "assistant", "tool", "user"]
    assert messages[1].tool_calls[0].name == "get_order_details" and messages[3].content == "thanks"
    assert tools == [TOOL]


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"role": "assistant", "tool_calls": [{"id": "c", "function": "get_order_details"}]}, "function"),
        ({"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}, "function.name"),
        ({"role": "assistant", "tool_calls": "get_order_details"}, "tool_calls"),
        ({"role": "wizard", "content": "x"}, "role"),
        ({"content": "no role"}, "role"),
        ({"role": "user", "content": 42}, "content"),
        ("just a string", "messages.1"),
    ],
)
def test_malformed_history_is_a_400_naming_the_field(engine, message, field):
    with TestClient(create_app(engine)) as http:
        err = error(post(http, body([{"role": "user", "content": "hi"}, message])), 400)
    assert err["type"] == "invalid_request_error" and field in err["message"]
    assert not engine.calls


@pytest.mark.parametrize(
    ("tool", "needle"),
    [
        ({"type": "function", "function": {"name": "f", "parameters": {"type": "objekt"}}}, "JSON Schema"),
        ({"type": "function", "function": {"name": "f", "parameters": {"required": "order_id"}}}, "JSON Schema"),
        ({"type": "function", "function": {"name": "f", "parameters": {"properties": {"a": 3}}}}, "JSON Schema"),
        ({"type": "function", "function": {"name": "no spaces allowed"}}, "name"),
        ({"type": "function", "function": "get_order_details"}, "function"),
        ({"type": "retrieval", "function": {"name": "f"}}, "type"),
        ("get_order_details", "tools.0"),
    ],
)
def test_invalid_tool_schemas_are_refused(engine, tool, needle):
    with TestClient(create_app(engine)) as http:
        err = error(post(http, body(tools=[tool])), 400)
    assert needle in err["message"] and "tools" in err["message"]
    assert not engine.calls


def test_duplicate_tool_names_are_refused(engine):
    with TestClient(create_app(engine)) as http:
        err = error(post(http, body(tools=[TOOL, TOOL])), 400)
    assert "duplicate tool names" in err["message"]


def test_api_key_when_set(engine):
    with TestClient(create_app(engine, api_key="s3cret")) as http:
        err = error(post(http, body()), 401)
        assert err["code"] == "invalid_api_key"
        error(post(http, body(), headers={"Authorization": "Bearer wrong"}), 401)
        error(http.get("/v1/models"), 401)
        assert http.get("/health").status_code == 200  # liveness probes need no key
        assert post(http, body(), headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert http.get("/v1/models", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert len(engine.calls) == 1


def test_no_api_key_by_default(engine):
    with TestClient(create_app(engine)) as http:
        assert post(http, body()).status_code == 200


def test_request_size_is_bounded(engine):
    big = body([{"role": "user", "content": "x" * 2_000_000}])
    with TestClient(create_app(engine)) as http:
        err = error(post(http, big), 413)
        assert err["code"] == "request_too_large" and "1000000" in err["message"]

        def chunks():  # no Content-Length: the bound holds for a streamed body too
            data = json.dumps(big).encode()
            for i in range(0, len(data), 65536):
                yield data[i : i + 65536]

        r = http.post("/v1/chat/completions", content=chunks(), headers={"content-type": "application/json"})
        error(r, 413)
    with TestClient(create_app(engine, max_request_bytes=100)) as http:
        error(post(http, body([{"role": "user", "content": "y" * 200}])), 413)
    assert not engine.calls


def test_a_turn_that_cannot_fit_never_reaches_the_engine(engine):
    """1024 tokens of context and at most 16 bytes a token: 20,000 bytes of user text cannot fit."""
    with TestClient(create_app(engine)) as http:
        err = error(post(http, body([{"role": "user", "content": "word " * 4000}])), 400)
        assert err["code"] == "context_length_exceeded" and "at least 1250" in err["message"]
        assert post(http, body([{"role": "user", "content": "word " * 100}])).status_code == 200
    assert len(engine.calls) == 1


def test_the_token_bound_is_a_lower_bound_on_a_real_tokenizer():
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast.from_pretrained("models/embedded", local_files_only=True)
    width = max_token_bytes(tokenizer)
    texts = ["word " * 300, "order #W1234567 for user_id yusuf_rossi_9620 " * 40, "é€😀 " * 200, "=" * 2000]
    for text in texts:
        tokens = len(tokenizer(text, add_special_tokens=False)["input_ids"])
        assert fewest_prompt_tokens([{"role": "user", "content": text}], width) <= tokens


def test_a_body_nested_too_deeply_is_a_400(engine):
    data = b'{"model": "fake", "messages": [{"role": "user", "content": "x"}], "x": ' + b"[" * 100_000
    data += b"]" * 100_000 + b"}"
    with TestClient(create_app(engine)) as http:
        r = http.post("/v1/chat/completions", content=data, headers={"content-type": "application/json"})
    assert "parsing the body" in error(r, 400)["message"]
