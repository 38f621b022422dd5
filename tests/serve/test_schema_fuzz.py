"""`agentloop serve` fuzzed from its own OpenAPI schema (schemathesis): valid and invalid requests generated from
`/openapi.json` for every operation; every reply must be documented there (status code, content type, body
schema, headers) and none may be a 5xx. The engine stands in for a model with hostile output (tool calls with
odd names and arguments, empty and non-ASCII text), which the reply schema must still describe."""

from __future__ import annotations

import hashlib
import json

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import positive_data_acceptance

from pipeline.rollout.trajectory import Message, ToolCall
from pipeline.serve import create_app
from pipeline.serve.engine import Generation

EXAMPLES = 150
CASES: dict[str, int] = {}


class HostileEngine:
    """Output that depends on the request: sometimes a tool call (with raw, unparsable arguments), sometimes
    text, sometimes nothing; finish reasons of every kind."""

    name = "fake"
    context = 4096
    max_token_bytes = 16

    def generate(self, messages, tools, policy, params) -> Generation:
        seed = hashlib.sha256(json.dumps([m.model_dump(mode="json") for m in messages]).encode()).digest()[0]
        if tools and seed % 3 == 0:
            name = tools[0]["function"]["name"]
            call = ToolCall(id=f"call_{seed}", name=name, arguments=None, raw_arguments="{not json ü")
            return Generation(Message(role="assistant", content=None, tool_calls=[call]), 5, 3, "tool_calls")
        text = ["", "ok ✓ \u202e", "x" * min(params.max_tokens, 50)][seed % 3]
        return Generation(Message(role="assistant", content=text), 5, 1, "length" if seed % 2 else "stop")


app = create_app(HostileEngine(), api_key=None)
schema = schemathesis.openapi.from_asgi("/openapi.json", app)
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE], max_examples=EXAMPLES)


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_reply_conforms_to_the_schema(case):
    """All of schemathesis' checks (not_a_server_error, status code, content type, body and header conformance,
    invalid requests refused) but one: a request the schema allows may still be refused with a 400 for what no
    JSON Schema can say (a lone surrogate, a prompt over the context, stream=true, n>1)."""
    CASES[case.operation.label] = CASES.get(case.operation.label, 0) + 1
    positive = case.meta is None or case.meta.generation.mode == GenerationMode.POSITIVE
    if positive and isinstance(case.body, dict) and len(str(case.body)) % 2:
        case.body["model"] = "fake"  # half the valid requests reach the engine
    response = case.call_and_validate(excluded_checks=[positive_data_acceptance])
    assert response.status_code < 500, response.text


def test_the_schema_documents_every_refusal():
    doc = app.openapi()
    chat = doc["paths"]["/v1/chat/completions"]["post"]["responses"]
    assert {"200", "400", "401", "404", "408", "413", "503"} <= set(chat) and "422" not in chat
    assert chat["400"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorResponse")


@pytest.mark.parametrize("path", ["/health", "/v1/models", "/v1/chat/completions"])
def test_a_method_not_allowed_names_the_allowed_ones(path):
    from fastapi.testclient import TestClient

    with TestClient(app) as http:
        r = http.request("TRACE", path)
    assert r.status_code == 405 and r.headers["allow"] and r.json()["error"]["type"] == "invalid_request_error"
