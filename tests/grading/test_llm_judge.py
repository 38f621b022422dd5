"""The LLM judge over a fake endpoint: it reads the rubric and transcript, its answer becomes an optional
component, unreadable answers are asked for again, and a judge that stays unreadable or unreachable makes the
trial an infrastructure error (left out), never a failure. Its usage is recorded apart from the agent's."""

from __future__ import annotations

import json

import pytest

from pipeline.authoring.templates import generate_tasks
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.endpoint.client import ChatClient, EndpointConfig
from pipeline.grading.grader import grade
from pipeline.grading.llm_judge import (
    DEFAULT_RUBRIC,
    LLMJudge,
    UnknownJudgeError,
    judge_usage,
    make_judge,
    parse_judgement,
)
from pipeline.rollout.runner import run_episode
from pipeline.rollout.trajectory import Usage
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world
from tests.agents.fake_openai import FakeOpenAI, Reply, completion


@pytest.fixture(scope="module")
def world():
    return load_world("gen-3-8x20x40")


@pytest.fixture(scope="module")
def episode(world):
    task = generate_tasks(world, 1, seed=2)[0]
    return task, run_episode(world, task, OracleAgent(), ScriptedUser())


def answer(*passed: bool) -> str:
    return json.dumps({"items": [{"item": i + 1, "passed": p, "reason": f"r{i}"} for i, p in enumerate(passed)]})


def judge(url: str, **kw) -> LLMJudge:
    return LLMJudge("judge-m", ChatClient(EndpointConfig(base_url=url, max_retries=0, timeout_s=5)), **kw)


def test_parse_judgement():
    assert parse_judgement("```json\n" + answer(True, False) + "\n```", 2) == [(True, "r0"), (False, "r1")]
    for bad in ("no json here", answer(True), '{"items": [{"item": 1, "passed": "yes"}]}'):
        with pytest.raises(ValueError):
            parse_judgement(bad, 1 if "yes" in bad else 2)


def test_judge_is_an_optional_component_with_its_own_usage(world, episode):
    task, traj = episode
    with FakeOpenAI([completion(answer(True, False, True), prompt_tokens=900, completion_tokens=40)]) as fake:
        j = judge(fake.base_url)
        verdict = grade(world, task, traj, judge=j)
    component = verdict.component("judge")
    assert not component.passed and not component.required and verdict.passed  # optional by default
    assert component.details == [f"{DEFAULT_RUBRIC[1]}: r1"]
    assert judge_usage(verdict) == Usage(prompt_tokens=900, completion_tokens=40) == j.usage
    prompt = fake.requests[0]["messages"][1]["content"]
    assert "[customer]" in prompt and "[agent calls] find_user_id_by" in prompt and DEFAULT_RUBRIC[0] in prompt
    assert traj.agent_usage == Usage()  # the judge's tokens are not the agent's


def test_task_rubric_and_retry_of_an_unreadable_answer(world, episode):
    task, traj = episode
    task = task.model_copy(update={"rubric": ["The agent was polite."]})
    with FakeOpenAI([completion("I think it was fine."), completion(answer(True))]) as fake:
        j = judge(fake.base_url)
        verdict = grade(world, task, traj, judge=j, judge_required=True)
    assert verdict.component("judge").passed and verdict.component("judge").required
    assert "The agent was polite." in fake.requests[0]["messages"][1]["content"]
    assert judge_usage(verdict).prompt_tokens == 22  # both calls counted


@pytest.mark.parametrize("reply", [completion("still not json"), Reply(503)])
def test_an_unusable_judge_excludes_the_trial(world, episode, reply):
    task, traj = episode
    with FakeOpenAI(default=lambda body: reply) as fake:
        verdict = grade(world, task, traj, judge=judge(fake.base_url, attempts=2))
    assert verdict.infra_error and "judge unavailable" in verdict.diagnostics[0]


def test_judge_specs(monkeypatch):
    monkeypatch.setenv("AGENTLOOP_JUDGE_BASE_URL", "http://127.0.0.1:7/v1")
    assert make_judge(None) is None and make_judge("none") is None
    j = make_judge("llm:gpt-j")
    assert j.model == "gpt-j" and j.client.config.base_url == "http://127.0.0.1:7/v1"
    with pytest.raises(UnknownJudgeError):
        make_judge("gpt-j")
