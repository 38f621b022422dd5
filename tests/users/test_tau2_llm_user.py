"""The τ²-bench-convention LLM user, against a local OpenAI-compatible stand-in: it plays the task's scenario
as written (no persona of ours), sees the chat with roles flipped, and its three stop signals end the episode
with their own termination reasons; the judge's user review makes a failure the simulator's, not the agent's."""

from __future__ import annotations

import json
import pickle

import pytest

from pipeline.domains.retail.oracle import OracleAgent
from pipeline.endpoint.client import ChatClient, EndpointConfig
from pipeline.grading.failure_modes import analyze
from pipeline.grading.grader import grade
from pipeline.grading.llm_judge import LLMJudge, judge_usage, parse_user_review
from pipeline.metrics.summary import TrialRecord, summarize
from pipeline.rollout.runner import run_episode
from pipeline.rollout.trajectory import Message, ToolCall
from pipeline.tau2.importer import import_tau2
from pipeline.users.llm import PERSONA_STYLE
from pipeline.users.registry import UnknownUserError, make_user
from pipeline.users.tau2_llm import GREETING, Tau2LLMUser, flipped, signal_of, system_prompt
from tests.agents.fake_openai import FakeOpenAI, Reply, completion
from tests.users.scenario_standin import scenario_reply


@pytest.fixture(scope="module")
def imported(tau2_dir):
    return import_tau2(tau2_dir)


@pytest.fixture(scope="module")
def task(imported):
    return next(t for t in imported.tasks if t.id == "0")


def user_at(url: str, **kw) -> Tau2LLMUser:
    return Tau2LLMUser("sim-m", base_url=url, max_retries=0, timeout_s=5, **kw)


def test_system_prompt_is_the_scenario_as_written(task):
    text = system_prompt(task.user_script.model_copy(update={"persona": "chatty"}))
    sc = task.user_script.scenario
    for value in (sc.reason_for_call, sc.known_info, sc.unknown_info, sc.task_instructions):
        assert value in text
    assert all(style not in text for style in PERSONA_STYLE.values())  # not our persona
    assert "online store" not in text
    for token in ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"):
        assert token in text
    with_persona = task.user_script.scenario.model_copy(update={"persona": "Retired, slow, exacting."})
    script = task.user_script.model_copy(update={"scenario": with_persona})
    assert "Persona:\nRetired, slow, exacting." in system_prompt(script)


def test_roles_flipped_after_the_greeting_and_tools_hidden():
    messages = [
        Message(role="user", content="I want a refund."),
        Message(role="assistant", tool_calls=[ToolCall(id="c", name="get_order_details", arguments={})]),
        Message(role="tool", content="{}", tool_call_id="c", name="get_order_details"),
        Message(role="assistant", content="Which order?"),
    ]
    out = flipped("SYS", messages)
    assert [(m["role"], m["content"]) for m in out] == [
        ("system", "SYS"),
        ("user", GREETING),
        ("assistant", "I want a refund."),
        ("user", "Which order?"),
    ]


def test_signal_of_takes_the_earliest():
    assert signal_of("bye ###STOP###") == "user_stop"
    assert signal_of("###TRANSFER### then ###STOP###") == "user_transfer"
    assert signal_of("hmm ###OUT-OF-SCOPE###") == "user_out_of_scope"
    assert signal_of("no signal") is None


def test_an_episode_plays_the_scenario_and_ends_with_stop(imported, task):
    with FakeOpenAI(default=scenario_reply) as fake:
        traj = run_episode(imported.world, task, OracleAgent(), user_at(fake.base_url, temperature=0.3), seed=1)
    assert traj.termination == "user_stop"
    assert traj.user == "tau2-llm:sim-m"
    said = [m.content for m in traj.messages if m.role == "user"]
    assert said[0].startswith("I received your order #W2378156")  # from the scenario's reason for call
    assert "Yusuf Rossi, zip code 19122" in said[2]  # the known info, when asked (email not remembered)
    assert any(e["name"] == "find_user_id_by_name_zip" and e["ok"] for e in traj.world_log)
    assert traj.user_usage.prompt_tokens == 11 * len(said)
    body = fake.requests[0]
    assert (body["model"], body["temperature"]) == ("sim-m", 0.3)
    assert isinstance(body["seed"], int)


@pytest.mark.parametrize(
    ("line", "termination"),
    [("Okay. ###TRANSFER###", "user_transfer"), ("I can't go on. ###OUT-OF-SCOPE###", "user_out_of_scope")],
)
def test_transfer_and_out_of_scope_are_their_own_terminations(imported, task, line, termination):
    with FakeOpenAI([completion("Hi, I need help."), completion(line)]) as fake:
        traj = run_episode(imported.world, task, OracleAgent(), user_at(fake.base_url))
    assert traj.termination == termination
    assert traj.messages[-1].content == line


def test_endpoint_trouble_is_an_infrastructure_error(imported, task):
    with FakeOpenAI(default=lambda body: Reply(status=500, body={"error": {"message": "down"}})) as fake:
        traj = run_episode(imported.world, task, OracleAgent(), user_at(fake.base_url))
    assert traj.termination == "infra_error" and "sim-m" in traj.error
    with FakeOpenAI(default=lambda body: completion("  ")) as fake:
        traj = run_episode(imported.world, task, OracleAgent(), user_at(fake.base_url))
    assert traj.termination == "infra_error" and "empty message" in traj.error


def test_specs_settings_and_pickling(monkeypatch):
    monkeypatch.setenv("AGENTLOOP_USER_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("AGENTLOOP_USER_API_KEY", "k-secret")
    user = make_user("tau2-llm:gpt-x,temperature=0.5,max_tokens=64,seed=3")
    assert (user.name, user.base_url, user.api_key) == ("tau2-llm:gpt-x", "http://127.0.0.1:9/v1", "k-secret")
    assert user.settings | {"guidelines_sha256": None} == {
        "kind": "tau2-llm",
        "model": "gpt-x",
        "base_url": "http://127.0.0.1:9/v1",
        "temperature": 0.5,
        "max_tokens": 64,
        "seed": 3,
        "guidelines_sha256": None,
    }
    assert "k-secret" not in str(user.settings)
    assert make_user("tau2-llm:m@http://10.0.0.1:8000/v1").base_url == "http://10.0.0.1:8000/v1"
    user.client  # noqa: B018  (built, then dropped by pickling)
    again = pickle.loads(pickle.dumps(user))
    assert again._client is None and again.settings == user.settings
    with pytest.raises(UnknownUserError, match="unknown setting 'colour=2'"):
        make_user("tau2-llm:m,colour=2")
    with pytest.raises(UnknownUserError, match="no model name"):
        make_user("tau2-llm:@http://x/v1")


def test_parse_user_review():
    ok = '{"stopped_early": {"flag": false}, "leaked_instructions": {"flag": false}, "off_scenario": {"flag": false}}'
    assert parse_user_review(ok) == []
    bad = ok.replace('"stopped_early": {"flag": false}', '"stopped_early": {"flag": true, "reason": "left at once"}')
    assert parse_user_review(bad) == ["stopped_early: left at once"]
    with pytest.raises(ValueError, match="off_scenario"):
        parse_user_review('{"stopped_early": {"flag": false}, "leaked_instructions": {"flag": false}}')


def _judge_reply(flag: bool):
    def answer(body: dict) -> Reply:
        system = body["messages"][0]["content"]
        if "review the customer's side" in system:
            review = {
                "stopped_early": {"flag": flag, "reason": "ended before the exchange"},
                "leaked_instructions": {"flag": False},
                "off_scenario": {"flag": False},
            }
            return completion(json.dumps(review))
        n = body["messages"][1]["content"].split("\n\nTranscript:")[0].count("\n")
        return completion(json.dumps({"items": [{"item": i, "passed": True} for i in range(1, n + 1)]}))

    return answer


@pytest.mark.parametrize("flag", [True, False])
def test_user_simulator_failure_is_its_own_category(imported, task, flag):
    with FakeOpenAI(default=scenario_reply) as fake:
        traj = run_episode(imported.world, task, OracleAgent(), user_at(fake.base_url))
    with FakeOpenAI(default=_judge_reply(flag)) as fake:
        judge = LLMJudge("judge-m", ChatClient(EndpointConfig(base_url=fake.base_url, max_retries=0, timeout_s=5)))
        verdict = grade(imported.world, task, traj, judge=judge)
    assert not verdict.passed  # the exchange never happened: the agent is not let off
    review = verdict.component("user_simulator")
    assert review is not None and review.passed is (not flag) and not review.required
    assert judge_usage(verdict).prompt_tokens == 22  # the rubric call and the review
    analysis = analyze(task, traj, verdict)
    record = TrialRecord(task_id=task.id, trial=0, passed=False, analysis=analysis)
    summary = summarize([record], agent="oracle", max_k=1, resamples=10)
    if flag:
        assert analysis.user_simulator == ["stopped_early: ended before the exchange"]
        assert analysis.modes == [] and analysis.dominant is None
        assert summary.user_simulator_failures == 1.0
    else:
        assert analysis.user_simulator == [] and summary.user_simulator_failures == 0.0


def test_a_passing_trial_is_not_reviewed(imported):
    no_write = next(t for t in imported.tasks if t.id == "10")
    with FakeOpenAI(default=scenario_reply) as fake:
        traj = run_episode(imported.world, no_write, OracleAgent(), user_at(fake.base_url))
    with FakeOpenAI(default=_judge_reply(True)) as fake:
        judge = LLMJudge("judge-m", ChatClient(EndpointConfig(base_url=fake.base_url, max_retries=0, timeout_s=5)))
        verdict = grade(imported.world, no_write, traj, judge=judge)
        systems = [b["messages"][0]["content"] for b in fake.requests]
    assert verdict.passed, verdict.failed_components
    assert verdict.component("user_simulator") is None
    assert not any("review the customer's side" in s for s in systems)
