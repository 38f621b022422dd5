"""`agentloop serve` for real, on loopback: a tiny checkpoint that learned one tool call is served, and the
`openai` backend talking to it plays the same episode as the embedded `hf` backend (same prompt ids, same
greedy output, same tool calls and ids, same end state); errors come back in OpenAI's shape."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from pipeline.agents.backends.hf import HFAgent
from pipeline.agents.backends.openai import OpenAIAgent, SamplingConfig
from pipeline.agents.checkpoint import META_FILE, ModelConfig
from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import write_tasks
from pipeline.dataset.task import Provenance, Task, UserScript
from pipeline.domains.retail.policy import POLICY_SUMMARY
from pipeline.domains.retail.tools import TOOLS
from pipeline.endpoint.client import ChatClient, EndpointConfig
from pipeline.formats.codec import CodecConfig, parse_assistant
from pipeline.measure import MeasureConfig, measure
from pipeline.rollout.protocols import EpisodeInfo, InfrastructureError, UserReply
from pipeline.rollout.runner import Limits, run_episode
from pipeline.rollout.trajectory import Message
from pipeline.world.registry import load_world
from tests.serve.fitted import fitted_checkpoint
from tests.server_process import wait_until_up

pytestmark = pytest.mark.slow
WORLD = "gen-5-8x10x20"
COMPACT = CodecConfig(system="compact", tool_results="compact", policy_summary=POLICY_SUMMARY)
TINY = ModelConfig(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, max_position_embeddings=1024)
OPENING = "Hi, I want to cancel an order."


class ThreeLineUser:
    name = "three-line-user"

    def start(self, info: EpisodeInfo) -> ThreeLineUser:
        self.lines = iter([OPENING, "My email is noone@example.com.", "Thanks, bye."])
        return self

    def respond(self, messages: list[Message]) -> UserReply:
        line = next(self.lines, None)
        return UserReply(content=line or "###STOP###", stop=line is None)


@pytest.fixture(scope="module")
def world():
    return load_world(WORLD)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, world):
    """A tiny random model fitted to answer the opening with a look-up call (so episodes do real tool work)."""
    email = next(iter(world.db.users.values())).email
    convo = [
        Message(role="user", content=OPENING),
        parse_assistant(
            '<tool_call>\n{"name": "find_user_id_by_email", "arguments": {"email": "' + email + '"}}\n</tool_call>'
        ),
    ]
    return fitted_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny", world, convo, TINY)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(checkpoint):
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "pipeline.cli",
        "serve",
        "--model",
        str(checkpoint),
        "--port",
        str(port),
        "--name",
        "tiny",
        "--max-concurrency",
        "2",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ})
    url = f"http://127.0.0.1:{port}"
    wait_until_up(proc, f"{url}/health", 90, "agentloop serve")
    yield url + "/v1"
    proc.terminate()
    proc.wait(timeout=20)


def client(url: str, **cfg) -> ChatClient:
    return ChatClient(EndpointConfig(base_url=url, timeout_s=30, max_retries=1, backoff_s=0.01, **cfg))


def a_task(world) -> Task:
    return Task(
        id="serve-smoke", world=world.name, user_script=UserScript(goal="cancel"), provenance=Provenance(source="eval")
    )


def test_openai_backend_over_serve_plays_the_hf_episode(world, checkpoint, server):
    limits = Limits(max_steps_per_turn=3)
    ref = run_episode(world, a_task(world), HFAgent(checkpoint, max_new_tokens=48), ThreeLineUser(), limits=limits)
    agent = OpenAIAgent("tiny", client(server), SamplingConfig(temperature=0.0, max_tokens=48))
    got = run_episode(world, a_task(world), agent, ThreeLineUser(), limits=limits)
    assert ref.world_log and ref.world_log[0]["name"] == "find_user_id_by_email" and ref.world_log[0]["ok"]
    assert len(got.messages) == len(ref.messages)
    for a, b in zip(got.messages, ref.messages, strict=True):
        assert (a.role, a.content, a.tool_calls, a.tool_call_id, a.error) == (
            b.role,
            b.content,
            b.tool_calls,
            b.tool_call_id,
            b.error,
        )
        if a.role == "assistant" and b.usage.completion_tokens:  # (a prompt over the context generates nothing)
            assert (a.usage.prompt_tokens, a.usage.completion_tokens) == (
                b.usage.prompt_tokens,
                b.usage.completion_tokens,
            )
    assert (got.world_log, got.final_hash, got.termination) == (ref.world_log, ref.final_hash, ref.termination)


def test_models_errors_and_concurrency(server):
    models = httpx.get(f"{server}/models").json()
    assert [m["id"] for m in models["data"]] == ["tiny"]
    r = httpx.post(
        f"{server}/chat/completions", json={"model": "other", "messages": [{"role": "user", "content": "x"}]}
    )
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
    r = httpx.post(f"{server}/chat/completions", json={"model": "tiny", "messages": []})
    assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
    r = httpx.post(
        f"{server}/chat/completions",
        json={"model": "tiny", "stream": True, "messages": [{"role": "user", "content": "x"}]},
    )
    assert r.status_code == 400
    with pytest.raises(InfrastructureError, match="HTTP 404"):
        client(server).complete({"model": "nope", "messages": [{"role": "user", "content": "x"}]})
    lone = b'{"model": "tiny", "messages": [{"role": "user", "content": "\\ud800"}]}'  # valid JSON, not text
    r = httpx.post(f"{server}/chat/completions", content=lone, headers={"content-type": "application/json"})
    assert r.status_code == 400 and "lone surrogate" in r.json()["error"]["message"]
    long = {"model": "tiny", "messages": [{"role": "user", "content": "word " * 3000}]}
    r = httpx.post(f"{server}/chat/completions", json=long)
    assert r.status_code == 400 and r.json()["error"]["code"] == "context_length_exceeded"
    body = {
        "model": "tiny",
        "messages": [{"role": "user", "content": OPENING}],
        "max_tokens": 8,
        "temperature": 1.0,
        "seed": 11,
    }
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda _: client(server).complete(body), range(4)))
    assert len({json.dumps(o.message, sort_keys=True) for o in outs}) == 1  # same seed, same sample, in parallel
    assert all(o.usage.completion_tokens <= 8 and o.finish_reason in ("stop", "length", "tool_calls") for o in outs)


def test_measure_through_the_endpoint(world, server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server)
    monkeypatch.delenv("AGENTLOOP_BASE_URL", raising=False)
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, generate_tasks(world, 2, seed=1))
    cfg = MeasureConfig(
        world=WORLD, tasks=tasks, agent="openai:tiny,max_tokens=24", trials=2, resamples=50, limits=Limits(max_turns=8)
    )
    summary = measure(cfg, tmp_path / "run")
    assert summary.infra_errors == 0 and summary.valid_trials == 4
    usage = json.loads((tmp_path / "run" / "usage.json").read_text())
    assert usage["agent"]["name"] == "openai:tiny" and usage["agent"]["prompt_tokens"] > 0
    assert usage["user"]["prompt_tokens"] == 0 and usage["judge"]["name"] is None


def test_any_transformers_checkpoint_is_served_through_the_codec(checkpoint, tmp_path):
    """Without agentloop.json or a chat template, a tokenizer holding the codec's tokens is read in the codec's
    format, and that is recorded on first use."""
    from fastapi.testclient import TestClient

    from pipeline.formats import CodecFormat
    from pipeline.serve import CheckpointEngine, create_app, load_engine

    plain = tmp_path / "plain"
    shutil.copytree(checkpoint, plain)
    (plain / META_FILE).unlink()
    engine = load_engine(plain, name="plain")
    assert isinstance(engine, CheckpointEngine) and isinstance(engine.format, CodecFormat)
    assert json.loads((plain / META_FILE).read_text())["architecture"] == "LlamaForCausalLM"
    with TestClient(create_app(engine)) as http:
        r = http.post(
            "/v1/chat/completions",
            json={
                "model": "plain",
                "max_tokens": 6,
                "tools": TOOLS.schemas()[:1],
                "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": OPENING}],
            },
        )
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["usage"]["completion_tokens"] <= 6 and out["choices"][0]["message"]["role"] == "assistant"


def test_the_served_model_answers_as_its_schema_says(server):
    """schemathesis against the real server and model: generated requests (valid and invalid), every reply
    documented in /openapi.json and none a 5xx."""
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from schemathesis import GenerationMode
    from schemathesis.checks import positive_data_acceptance

    schema = schemathesis.openapi.from_url(server.removesuffix("/v1") + "/openapi.json")
    schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
    failures = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(case=operation.as_strategy())
        def check(case):
            positive = case.meta is None or case.meta.generation.mode == GenerationMode.POSITIVE
            if positive and isinstance(case.body, dict) and len(str(case.body)) % 2:
                case.body["model"] = "tiny"  # half the requests reach the model itself
                case.body["max_tokens"] = 8
            try:  # every check but "schema-valid requests are accepted" (see test_schema_fuzz.py)
                case.call_and_validate(timeout=60, excluded_checks=[positive_data_acceptance])
            except Exception as exc:
                failures.append(f"{case.operation.label}: {exc}")
                raise

        check()
    assert not failures
