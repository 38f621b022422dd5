"""The openai client through the SDK against a real HTTP server on loopback: every retryable status retried,
`Retry-After` honoured in both forms, a setting the model refuses named with its fix, a context overflow ending
the episode as the agent's failure, and cached / reasoning tokens recorded and priced."""

from __future__ import annotations

import email.utils
import json
import time

import pytest

from pipeline.agents.backends.openai import OpenAIAgent
from pipeline.agents.registry import make_agent
from pipeline.authoring.templates import generate_tasks
from pipeline.endpoint.client import ChatClient, EndpointConfig
from pipeline.endpoint.errors import ContextLengthError, UnsupportedSettingError, retry_after
from pipeline.grading.grader import grade
from pipeline.metrics.cost import Price, PriceTable
from pipeline.rollout.protocols import EpisodeInfo, InfrastructureError
from pipeline.rollout.runner import Limits, run_episode
from pipeline.rollout.trajectory import Usage
from pipeline.trials.executor import SerialExecutor
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world
from tests.agents.fake_openai import FakeOpenAI, Reply, completion

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
REFUSED_TEMPERATURE = {
    "error": {
        "message": "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1)"
        " value is supported.",
        "type": "invalid_request_error",
        "param": "temperature",
        "code": "unsupported_value",
    }
}


@pytest.fixture(scope="module")
def world():
    return load_world("gen-3-8x20x40")


@pytest.fixture(scope="module")
def task(world):
    return generate_tasks(world, 1, seed=2)[0]


def client(url: str, sleeps: list[float], **cfg) -> ChatClient:
    settings = {"base_url": url, "timeout_s": 3.0, "max_retries": 2, "backoff_s": 0.01, "backoff_cap_s": 5.0, **cfg}
    return ChatClient(EndpointConfig(**settings), sleep=sleeps.append)


@pytest.mark.parametrize("status", [408, 409, 425, 429, 500, 502, 503, 504])
def test_every_retryable_status_is_retried(status):
    sleeps: list[float] = []
    with FakeOpenAI([Reply(status, {"error": {"message": "try again"}}), completion("ok")]) as fake:
        out = client(fake.base_url, sleeps).complete(BODY)
    assert out.message["content"] == "ok" and out.attempts == 2 and len(fake.requests) == 2
    assert len(sleeps) == 1 and sleeps[0] <= 0.01


def test_503_waits_for_retry_after_in_seconds_and_as_an_http_date():
    sleeps: list[float] = []
    soon = email.utils.formatdate(time.time() + 3, usegmt=True)
    late = email.utils.formatdate(time.time() + 3600, usegmt=True)
    replies = [
        Reply(503, headers={"Retry-After": "2"}),
        Reply(503, headers={"Retry-After": soon}),
        Reply(503, headers={"Retry-After": late}),
        completion("ok"),
    ]
    with FakeOpenAI(replies) as fake:
        out = client(fake.base_url, sleeps, max_retries=3).complete(BODY)
    assert out.attempts == 4
    assert sleeps[0] == 2.0
    assert 1.0 < sleeps[1] <= 3.0  # the date's whole seconds, less the time already gone
    assert sleeps[2] == 5.0  # an hour away: capped at backoff_cap_s


def test_429_retried_until_the_retries_run_out():
    sleeps: list[float] = []
    limited = Reply(429, {"error": {"message": "rate limited"}}, headers={"retry-after-ms": "1500"})
    with (
        FakeOpenAI(default=lambda body: limited) as fake,
        pytest.raises(InfrastructureError, match="gave up after 3 attempts; last: HTTP 429"),
    ):
        client(fake.base_url, sleeps).complete(BODY)
    assert len(fake.requests) == 3 and sleeps == [1.5, 1.5]


def test_retry_after_forms():
    now = 1_000_000.0
    assert retry_after({"Retry-After": "7"}, now) == 7.0
    assert retry_after({"retry-after": email.utils.formatdate(now + 42, usegmt=True)}, now) == pytest.approx(42)
    assert retry_after({"Retry-After": email.utils.formatdate(now - 42, usegmt=True)}, now) == 0.0  # past
    assert retry_after({"Retry-After": "soon"}, now) is None and retry_after({}, now) is None


def test_temperature_none_leaves_it_out_of_the_request(world, task, monkeypatch):
    with FakeOpenAI() as fake:
        monkeypatch.setenv("AGENTLOOP_BASE_URL", fake.base_url)
        agent = make_agent("openai:reasoner,temperature=none,max_tokens=64")
        assert agent.sampling.temperature is None
        run_episode(world, task, agent, ScriptedUser(), limits=Limits())
        make_agent("openai:plain").client.complete(BODY | {"temperature": 0.0})
    first, plain = fake.requests[0], fake.requests[-1]
    assert "temperature" not in first and first["max_tokens"] == 64 and "seed" in first
    assert plain["temperature"] == 0.0
    assert "authorization" not in fake.headers[0]  # no key given: no header


def test_a_refused_temperature_stops_the_run_with_the_fix(world, task):
    sleeps: list[float] = []
    with FakeOpenAI(default=lambda body: Reply(400, REFUSED_TEMPERATURE)) as fake:
        agent = OpenAIAgent("reasoner", client(fake.base_url, sleeps))
        with pytest.raises(UnsupportedSettingError, match=r"openai:reasoner,temperature=none"):
            list(SerialExecutor(retries=2).run(world, [task], agent, ScriptedUser(), trials=2))
    assert len(fake.requests) == 1 and not sleeps  # not retried, not one excluded trial after another
    text_only = {"object": "error", "message": "temperature is not supported for this model", "code": 400}
    with FakeOpenAI([Reply(400, text_only)]) as fake, pytest.raises(UnsupportedSettingError, match="`temperature`"):
        client(fake.base_url, sleeps).complete(BODY | {"temperature": 0.7})
    other = {"error": {"message": "tools[0].function.name is invalid", "param": "tools"}}
    with FakeOpenAI([Reply(400, other)]) as fake, pytest.raises(InfrastructureError, match="HTTP 400"):
        client(fake.base_url, sleeps).complete(BODY | {"temperature": 0.7})


@pytest.mark.parametrize(
    "error",
    [
        {"error": {"message": "Input too long.", "code": "context_length_exceeded", "param": "messages"}},
        {"object": "error", "message": "This model's maximum context length is 2048 tokens. However, you requested"},
        {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens"}},
        {"error": {"message": "Too many tokens in the request"}},
    ],
)
def test_a_context_overflow_is_the_agents_failure_not_the_endpoints(world, task, error):
    sleeps: list[float] = []
    with FakeOpenAI([Reply(400, error)]) as fake, pytest.raises(ContextLengthError):
        client(fake.base_url, sleeps).complete(BODY)
    with FakeOpenAI(default=lambda body: Reply(400, error)) as fake:
        agent = OpenAIAgent("m", client(fake.base_url, sleeps))
        traj = run_episode(world, task, agent, ScriptedUser(), limits=Limits())
    assert traj.termination == "agent_stop" and traj.error is None and not sleeps
    verdict = grade(world, task, traj)
    assert not verdict.infra_error and not verdict.passed


def test_cached_and_reasoning_tokens_are_recorded_and_priced(world, task):
    sleeps: list[float] = []
    reply = completion("Goodbye.", prompt_tokens=1000, completion_tokens=300, cached_tokens=800, reasoning_tokens=250)
    with FakeOpenAI(default=lambda body: reply) as fake:
        traj = run_episode(world, task, OpenAIAgent("gpt-x", client(fake.base_url, sleeps)), ScriptedUser())
    turns = sum(1 for m in traj.messages if m.role == "assistant")
    assert traj.agent_usage == Usage(
        prompt_tokens=1000 * turns,
        completion_tokens=300 * turns,
        cached_prompt_tokens=800 * turns,
        reasoning_tokens=250 * turns,
    )
    stored = json.loads(traj.without_timings().model_dump_json())["agent_usage"]
    assert stored["cached_prompt_tokens"] == 800 * turns and stored["reasoning_tokens"] == 250 * turns
    assert "cached_prompt_tokens" not in Usage(prompt_tokens=3).model_dump_json()  # older records keep their bytes
    table = PriceTable(
        models={"gpt-x": Price(prompt_per_million=2, completion_per_million=8, cached_prompt_per_million=0.5)}
    )
    per_turn = (200 * 2 + 800 * 0.5 + 300 * 8) / 1e6  # reasoning tokens are billed as completion tokens
    assert table.find("openai:gpt-x").cost(traj.agent_usage) == pytest.approx(per_turn * turns)
    assert table.find("openai:other") is None


def test_measure_prices_an_openai_agent_by_its_model(world, task, tmp_path, monkeypatch):
    from pipeline.dataset.io import write_tasks
    from pipeline.measure import MeasureConfig, measure

    write_tasks(tmp_path / "tasks.jsonl", [task])
    reply = completion("Goodbye.", prompt_tokens=1000, completion_tokens=100, cached_tokens=500)
    table = PriceTable(currency="EUR", models={"gpt-x": Price(prompt_per_million=2, cached_prompt_per_million=1)})
    with FakeOpenAI(default=lambda body: reply) as fake:
        monkeypatch.setenv("AGENTLOOP_BASE_URL", fake.base_url)
        for agent, out in (("openai:gpt-x", "priced"), ("openai:unknown", "unpriced")):
            cfg = MeasureConfig(
                world="gen-3-8x20x40", tasks=tmp_path / "tasks.jsonl", agent=agent, trials=2, resamples=20, prices=table
            )
            measure(cfg, tmp_path / out)
    priced = json.loads((tmp_path / "priced" / "metrics.json").read_text())["cost"]
    usage = json.loads((tmp_path / "priced" / "usage.json").read_text())["agent"]
    turns = usage["prompt_tokens"] // 1000
    assert priced["priced"] and priced["currency"] == "EUR" and usage["cached_prompt_tokens"] == 500 * turns
    assert priced["total_cost"] == pytest.approx(turns * (500 * 2 + 500 * 1) / 1e6)
    assert usage["cost"] == pytest.approx(priced["total_cost"])
    assert priced["total_tokens"] == turns * 1100
    unpriced = json.loads((tmp_path / "unpriced" / "metrics.json").read_text())["cost"]
    assert not unpriced["priced"] and unpriced["total_cost"] == 0 and unpriced["total_tokens"] == turns * 1100


def test_user_simulators_and_the_judge_take_temperature_none(world, task, monkeypatch):
    from pipeline.grading.llm_judge import UnknownJudgeError, make_judge
    from pipeline.users.registry import make_user

    def answer(body: dict) -> Reply:
        return completion('{"confirmed": true}' if body["model"] == "judge" else "Bye. ###STOP###")

    with FakeOpenAI(default=answer) as fake:
        monkeypatch.setenv("AGENTLOOP_BASE_URL", fake.base_url)
        for spec in ("llm:sim,temperature=none", "tau2-llm:sim,temperature=none"):
            user = make_user(spec)
            reply = user.start(EpisodeInfo(task=task, trial=0, seed=1, policy="", tools=[])).respond([])
            assert reply.stop and reply.usage.prompt_tokens == 11
        judge = make_judge("llm:judge,temperature=none")
        assert judge.confirms("Shall I cancel it?", "yes please")
    assert [("temperature" in r, r["model"]) for r in fake.requests] == [
        (False, "sim"),
        (False, "sim"),
        (False, "judge"),
    ]
    assert make_judge("llm:judge").sampling == {"temperature": 0.0}
    with pytest.raises(UnknownJudgeError, match=r"llm:MODEL\[,temperature=none\]"):
        make_judge("llm:judge,temperature=0.3")
