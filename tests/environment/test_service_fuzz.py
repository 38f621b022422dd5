"""`agentloop env serve` fuzzed from its own OpenAPI schema (schemathesis): valid and invalid requests generated
from `/openapi.json` for every operation, against a small retail world; every reply must be documented there
(status code, content type, body schema) and none may be a 5xx. Half the generated requests name a served world
and a real open episode, so they reach the environment (tool calls with odd names and arguments, odd tables and
predicates, odd tasks) rather than stopping at a 404."""

from __future__ import annotations

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import positive_data_acceptance

from pipeline.environment.factory import environment_factory
from pipeline.environment.service import create_app

EXAMPLES = 100
WORLD = "gen-3-4x10x20"
CASES: dict[str, int] = {}

factory, served = environment_factory("retail", [WORLD])
app = create_app(factory, served, max_episodes=50)
http = TestClient(app)  # outside a `with`: the app's lifespan (which closes every episode at its end) never runs


def an_episode() -> str:
    """A fresh open episode of the world, authenticated as one of its customers half the time."""
    user = None if len(app.state.registry) % 2 else "mohamed_wong_0593"
    return http.post("/episodes", json={"world": WORLD, "authenticated_user_id": user}).json()["episode"]


schema = schemathesis.openapi.from_asgi("/openapi.json", app)
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE], max_examples=EXAMPLES)


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_every_reply_conforms_to_the_schema(case):
    """All of schemathesis' checks (no 5xx, status code, content type, body conformance, invalid requests refused)
    but one: a request the schema allows may still be refused (400, 404) for what no JSON Schema can say (an
    unknown world, table or episode, a task that is not a task)."""
    positive = case.meta is None or case.meta.generation.mode == GenerationMode.POSITIVE
    seed = len(repr(case.body)) + len(repr(case.path_parameters))
    if positive and case.path_parameters and seed % 2:
        if "episode_id" in case.path_parameters:
            case.path_parameters["episode_id"] = an_episode()
        if "world" in case.path_parameters:
            case.path_parameters["world"] = WORLD
    if positive and isinstance(case.body, dict) and "world" in case.body and seed % 2:
        case.body["world"] = WORLD
    CASES[case.operation.label] = CASES.get(case.operation.label, 0) + 1
    response = case.call_and_validate(excluded_checks=[positive_data_acceptance])
    assert response.status_code < 500, response.text


def test_the_schema_documents_every_refusal():
    doc = app.openapi()
    run = doc["paths"]["/episodes/{episode_id}/run"]["post"]["responses"]
    assert {"200", "400", "404", "422", "503"} <= set(run)
    for code in ("400", "404", "422"):
        assert run[code]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut")
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    fields = doc["components"]["schemas"]["RunIn"]["properties"]
    assert all(f.get("description") for f in fields.values())  # the fields document themselves


@pytest.mark.parametrize("path", ["/worlds", "/episodes", "/episodes/x"])
def test_a_method_not_allowed_is_refused_in_the_errors_shape(path):
    r = http.request("PATCH", path)
    assert r.status_code == 405 and r.headers["allow"] and r.json()["detail"]
