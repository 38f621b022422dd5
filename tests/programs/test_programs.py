"""Agent programs measured like any agent: the oracle as a program over MCP gives the in-process oracle's
trajectories and verdicts; a program that crashes, replies empty, runs past its time or its budgets fails as the
agent, named in the trajectory and the verdict; the hub failing is infrastructure; a write delivered twice in one
turn is named; the spec's errors name the spec; the agent pickles by its spec."""

from __future__ import annotations

import json
import pickle
from functools import lru_cache

import pytest

from pipeline.agents import make_agent
from pipeline.agents.registry import UnknownAgentError
from pipeline.authoring import generate_tasks
from pipeline.dataset import Task
from pipeline.grading import analyze
from pipeline.programs import ProgramAgent, episode_hub
from pipeline.rollout import NOT_RUN, TURN_OVER, Limits, Trajectory
from pipeline.trials import TrialResult
from pipeline.trials.trial import run_trial
from pipeline.users.scripted import ScriptedUser
from pipeline.world import World, load_world
from tests.programs import programs

ORACLE = "program:pipeline.programs.scripted:OracleProgram"
HELPERS = "tests.programs.programs"


@lru_cache(maxsize=1)
def world() -> World:
    return load_world("gen-3")


@lru_cache(maxsize=1)
def tasks() -> tuple[Task, ...]:
    return tuple(generate_tasks(world(), 8, seed=1))


def play(spec: str, task: Task | None = None, trial: int = 0, limits: Limits | None = None) -> TrialResult:
    return run_trial(world(), task or tasks()[0], make_agent(spec), ScriptedUser(), trial, limits=limits)


def without_clock(traj: Trajectory) -> dict:
    data = json.loads(traj.without_timings().model_dump_json())
    for key in ("agent", "tool_loop"):
        data.pop(key, None)
    return data


# ---- the oracle as a program ----------------------------------------------------------------------------------------
def test_the_oracle_as_a_program_plays_the_in_process_oracles_episodes():
    for i, task in enumerate(tasks()):
        direct = run_trial(world(), task, make_agent("oracle"), ScriptedUser(), i % 2)
        program = play(ORACLE, task, i % 2)
        assert program.trajectory.tool_loop == "agent" and direct.trajectory.tool_loop == "runner"
        assert without_clock(program.trajectory) == without_clock(direct.trajectory), task.id
        assert program.verdict == direct.verdict, task.id
        assert program.verdict.passed, task.id
    assert any(m.tool_calls for m in program.trajectory.messages), "the oracle made its calls through MCP"
    assert len(episode_hub()) == 0, "every episode unregistered at its end"


def test_a_model_agents_trajectory_keeps_its_bytes():
    """No tool_loop key for the runner's own loop: a model's record reads as it did."""
    result = run_trial(world(), tasks()[0], make_agent("oracle"), ScriptedUser(), 0)
    assert "tool_loop" not in json.loads(result.trajectory.model_dump_json())
    assert "tool_loop" in json.loads(play(ORACLE).trajectory.model_dump_json())


# ---- agent failures -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "termination", "said"),
    [
        ("Crashing", "program_crash", "respond: ValueError: the program broke"),
        ("CrashingAtStart", "program_crash", "starting: RuntimeError: cannot start"),
        ("not_a_program", "program_crash", "not an AgentProgram"),
        ("Empty", "program_empty_reply", "respond returned '   '"),
        ("NotText", "program_empty_reply", "respond returned a NoneType"),
    ],
)
def test_a_failing_program_is_the_agents_failure_named(name, termination, said):
    result = play(f"program:{HELPERS}:{name}")
    traj, verdict = result.trajectory, result.verdict
    assert traj.termination == termination and said in (traj.error or "")
    assert not verdict.infra_error and not verdict.passed
    program = verdict.component("program")
    assert program is not None and program.required and not program.passed
    assert program.details[0].startswith(f"{termination}: ") and said in program.details[0]
    assert "program" in verdict.failed_components
    assert "gave_up" in analyze(tasks()[0], traj, verdict).signature
    assert traj.messages[-1].role != "assistant" or traj.messages[-1].tool_calls, "the failed reply is not said"


def test_a_crashing_programs_calls_before_the_crash_are_recorded():
    traj = play(f"program:{HELPERS}:Crashing").trajectory
    assert [c.name for c in traj.tool_calls()] == ["find_user_id_by_email"]
    assert traj.world_log[0]["name"] == "find_user_id_by_email"


def test_a_program_past_its_turns_time_is_stopped_waiting_for():
    programs.RELEASE.clear()
    try:
        result = play(f"program:{HELPERS}:Hanging,turn_timeout=0.5")
        assert result.trajectory.termination == "program_timeout"
        assert "0.5 s" in (result.trajectory.error or "")
        assert result.verdict.component("program") is not None and not result.verdict.passed
        assert "Hanging" in programs.CLOSED, "its close() is called although its thread is still running"
    finally:
        programs.RELEASE.set()


def test_past_the_tool_budget_calls_are_not_run_and_the_episode_ends():
    result = play(f"program:{HELPERS}:Looping", limits=Limits(max_tool_calls=5))
    traj, verdict = result.trajectory, result.verdict
    assert traj.termination == "turn_limit" and "budget of 5" in (traj.error or "")
    tool_messages = [m.content for m in traj.messages if m.role == "tool"]
    assert len(tool_messages) == 8 and tool_messages[5:] == [NOT_RUN] * 3
    assert len(traj.world_log) == 5
    budget = verdict.component("static.tool_budget")
    assert budget is not None and not budget.passed and "8 tool calls exceed the budget of 5" in budget.details[0]
    assert traj.messages[-1].role == "tool", "the reply after the limit is not said"
    assert verdict.component("replay_consistency").passed  # type: ignore[union-attr]


def test_past_the_turns_steps_calls_are_refused_unrecorded():
    result = play(f"program:{HELPERS}:Looping", limits=Limits(max_steps_per_turn=3))
    traj = result.trajectory
    assert traj.termination == "turn_limit" and "3 tool calls in one turn" in (traj.error or "")
    assert len(traj.tool_calls()) == 3 and len(traj.world_log) == 3
    assert result.verdict.component("static.tool_budget").passed  # type: ignore[union-attr]


def test_past_the_tool_budget_the_program_reads_not_run_and_past_the_turn_limit_turn_over():
    from pipeline.programs.agent import ProgramAgentEpisode

    seen: list[str] = []
    original = ProgramAgentEpisode.end_episode

    def keep(self):
        if self.program is not None:
            seen.extend(r.content for r in self.program.results)
        original(self)

    ProgramAgentEpisode.end_episode = keep  # type: ignore[method-assign]
    try:
        play(f"program:{HELPERS}:Looping", limits=Limits(max_tool_calls=5))
        assert seen[5:] == [NOT_RUN] * 3
        seen.clear()
        play(f"program:{HELPERS}:Looping", limits=Limits(max_steps_per_turn=3))
        assert seen[3:] == [TURN_OVER] * 5
    finally:
        ProgramAgentEpisode.end_episode = original  # type: ignore[method-assign]


# ---- infrastructure -------------------------------------------------------------------------------------------------
def test_an_infrastructure_error_under_the_programs_error_is_infrastructure():
    result = run_trial(
        world(), tasks()[0], make_agent(f"program:{HELPERS}:LostEnvironment"), ScriptedUser(), 0, retries=1
    )
    assert result.trajectory.termination == "infra_error" and result.verdict.infra_error
    assert result.attempts == 2, "retried, as for a model endpoint"


def test_a_hub_that_cannot_start_is_infrastructure(monkeypatch):
    from pipeline.programs import hub as hub_module

    broken = hub_module.EpisodeHub(host="203.0.113.1")  # an address this machine does not have
    monkeypatch.setattr(hub_module, "_hub", broken)
    result = play(ORACLE)
    assert result.trajectory.termination == "infra_error" and result.verdict.infra_error
    assert "episode hub cannot listen" in (result.trajectory.error or "")


def test_a_view_that_fails_serving_a_call_is_infrastructure(monkeypatch):
    from pipeline.programs import hub as hub_module

    def broken(world):
        raise RuntimeError("metadata lost")

    monkeypatch.setattr(hub_module, "metadata_of", broken)
    result = play(ORACLE)
    assert result.trajectory.termination == "infra_error"
    assert "MCP server failed: RuntimeError: metadata lost" in (result.trajectory.error or "")


# ---- at-least-once delivery -----------------------------------------------------------------------------------------
def test_a_write_delivered_twice_in_one_turn_is_named_and_the_state_decides():
    named = 0
    for task in tasks():
        direct = run_trial(world(), task, make_agent("oracle"), ScriptedUser(), 0)
        result = play(f"program:{HELPERS}:RetryingOracle", task)
        component = result.verdict.component("repeated_writes")
        writes = [c for c in direct.trajectory.tool_calls() if c.name.startswith(programs.RetryingOracle.WRITES)]
        if not writes:
            assert component is None
            continue
        named += 1
        assert component is not None and not component.required and not component.passed
        assert writes[0].name in component.details[0] and "first at message" in component.details[0]
        assert any("at-least-once" in d for d in result.verdict.diagnostics)
        state = result.verdict.component("state")
        assert state is not None
        assert result.verdict.passed == all(c.passed for c in result.verdict.components if c.required)
    assert named, "some task writes"


def test_the_same_write_in_two_turns_is_not_a_repeat():
    from pipeline.grading.delivery import repeated_writes
    from pipeline.rollout import Message, ToolCall

    arguments = {"order_id": "#W1", "reason": "no longer needed"}
    call = ToolCall(id="call_1", name="cancel_pending_order", arguments=arguments)
    again = call.model_copy(update={"id": "call_2"})
    tool = Message(role="tool", content="{}", tool_call_id="call_1", name=call.name)
    traj = Trajectory(
        task_id="t",
        agent="a",
        user="u",
        world="w",
        tool_loop="agent",
        messages=[
            Message(role="user", content="hi"),
            Message(role="assistant", tool_calls=[call]),
            tool,
            Message(role="user", content="again"),
            Message(role="assistant", tool_calls=[again]),
            tool.model_copy(update={"tool_call_id": "call_2"}),
        ],
    )
    assert repeated_writes(world(), traj) == []


# ---- the spec -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("program:nomodule_here:X", "cannot import module 'nomodule_here'"),
        (f"program:{HELPERS}:Missing", f"module '{HELPERS}' has no attribute 'Missing'"),
        (f"program:{HELPERS}:NOT_CALLABLE", "is a int, not a class or function"),
        (f"program:{HELPERS}", "expected program:MODULE:FACTORY"),
        (f"{ORACLE},colour=red", "unknown setting 'colour'"),
        (f"{ORACLE},base_url=ftp://x", "base_url must be an http(s) URL"),
        (f"{ORACLE},turn_timeout=-1", "turn_timeout must be seconds > 0"),
        (f"{ORACLE},model", "must look like key=value"),
    ],
)
def test_a_bad_spec_is_one_line_naming_it(spec, said):
    with pytest.raises(UnknownAgentError) as caught:
        make_agent(spec)
    message = str(caught.value)
    assert said in message and spec.split(",")[0] in message and "\n" not in message


def test_the_spec_carries_the_model_endpoint_and_pickles_by_itself():
    spec = f"{ORACLE},base_url=http://127.0.0.1:8000/v1,model=smol,turn_timeout=20"
    agent = make_agent(spec)
    assert isinstance(agent, ProgramAgent)
    assert (agent.base_url, agent.model, agent.turn_timeout_s) == ("http://127.0.0.1:8000/v1", "smol", 20.0)
    assert agent.name == ORACLE and agent.settings["kind"] == "program"
    copy = pickle.loads(pickle.dumps(agent))
    assert copy.spec == spec and copy.factory is agent.factory


def test_the_program_is_given_its_mcp_url_policy_and_model_endpoint():
    from pipeline.programs.agent import ProgramAgentEpisode

    seen = {}
    original = ProgramAgentEpisode.end_episode

    def keep(self):
        if self.program is not None:
            seen["episode"] = self.program.episode
        original(self)

    ProgramAgentEpisode.end_episode = keep  # type: ignore[method-assign]
    try:
        play(f"program:{HELPERS}:Base,base_url=http://127.0.0.1:8000/v1,model=smol", trial=1)
    finally:
        ProgramAgentEpisode.end_episode = original  # type: ignore[method-assign]
    episode = seen["episode"]
    assert episode.mcp_url.startswith("http://127.0.0.1:") and episode.mcp_url.endswith("/mcp")
    assert len(episode.mcp_url.split("/episodes/")[1].split("/")[0]) >= 32, "an unguessable id"
    assert episode.policy == world().policy and episode.task_id == tasks()[0].id and episode.trial == 1
    episode_id = episode.mcp_url.split("/episodes/")[1].split("/")[0]
    assert episode.model == "smol"  # its model calls go through the episode's own proxy in front of the endpoint
    assert episode.model_base_url.startswith("http://127.0.0.1:")
    assert episode.model_base_url.endswith(f"/episodes/{episode_id}/v1")
    from pipeline.programs.proxy import model_proxy

    assert model_proxy("http://127.0.0.1:8000/v1").upstream == "http://127.0.0.1:8000/v1"


# ---- episodes in flight -------------------------------------------------------------------------------------------
def test_episodes_in_flight_play_their_programs_at_once():
    from pipeline.trials.batch import run_batched

    agent = make_agent(ORACLE)
    assert type(agent.decoder()).__name__ == "Concurrent", "each in-flight episode's turn in its own thread"
    jobs = [(task, trial) for task in tasks() for trial in (0, 1)]
    results = list(run_batched(world(), jobs, agent, ScriptedUser(), width=6))
    assert len(results) == len(jobs)
    for result in results:
        direct = run_trial(world(), result.task, make_agent("oracle"), ScriptedUser(), result.trial)
        assert result.verdict == direct.verdict and result.verdict.passed
    assert len(episode_hub()) == 0


def test_calls_from_many_threads_are_executed_one_at_a_time_and_all_recorded():
    import threading

    from pipeline.dataset import start_session
    from pipeline.rollout import EpisodeTools
    from pipeline.rollout.runner import _Episode
    from pipeline.rollout.trajectory import Timings

    limits = Limits(max_tool_calls=20, max_steps_per_turn=50, max_turns=100)
    session = start_session(world(), tasks()[0])
    ep = _Episode(session, Trajectory(task_id="t", agent="a", user="u", world="w"), limits, False, Timings())
    tools = EpisodeTools(ep)
    tools._begin()
    threads = [threading.Thread(target=tools.run, args=("list_all_product_types", {})) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    calls, ended, why, _ = tools._end()
    assert len(calls) == len(session.log) == 20 == ep.tool_calls
    assert [c.id for c, _ in calls] == [f"call_{i + 1}" for i in range(len(calls))]
    assert ended == "turn_limit" and "budget" in (why or "")
    message, _ = tools.run("list_all_product_types", {})
    assert message.content == TURN_OVER and len(session.log) == len(calls), "after the turn: refused, not run"


def test_params_name_a_program_as_agent_program():
    """`agent:program:…` (baseline.source, train.method): checked before the loop runs, as any agent spec."""
    from pipeline.loop.resolve import _agent

    _agent(f"agent:{ORACLE},turn_timeout=60")
    with pytest.raises(UnknownAgentError, match="cannot import module 'nomodule_here'"):
        _agent("agent:program:nomodule_here:X")


def test_a_call_through_the_hub_does_not_wait_out_a_delayed_ack():
    """The hub's connections send at once (TCP_NODELAY): a call takes about a millisecond, not the ~40 ms a
    response written in two parts waits for the client's delayed ACK."""
    import statistics
    import time

    from pipeline.dataset import start_session
    from pipeline.environment import McpEnvironmentClient
    from pipeline.programs import LiveEpisode
    from pipeline.rollout import EpisodeTools
    from pipeline.rollout.runner import _Episode
    from pipeline.rollout.trajectory import Timings

    limits = Limits(max_tool_calls=100, max_steps_per_turn=100, max_turns=300)
    session = start_session(world(), tasks()[0])
    ep = _Episode(session, Trajectory(task_id="t", agent="a", user="u", world="w"), limits, False, Timings())
    tools = EpisodeTools(ep)
    tools._begin()
    hub = episode_hub()
    episode_id = hub.register(LiveEpisode(tools))
    try:
        with McpEnvironmentClient(hub.url(episode_id)) as client:
            took = []
            for _ in range(15):
                t0 = time.perf_counter()
                client.call("list_all_product_types", {})
                took.append(time.perf_counter() - t0)
    finally:
        hub.unregister(episode_id)
    assert statistics.median(took) < 0.03, f"median {statistics.median(took) * 1000:.0f} ms a call"


# ---- the model proxy in front of the program's model --------------------------------------------------------------
def test_a_programs_model_calls_are_recorded_in_its_trajectory():
    from tests.programs.scripted_model import ScriptedModel, text

    with ScriptedModel([text("I can help with that.")]) as model:
        result = play(f"program:{HELPERS}:AsksModel,base_url={model.base_url},model=smol")
    traj = result.trajectory
    assert traj.model_calls and traj.model_calls[0]["messages"][0]["role"] == "user"
    assert "latency_s" not in traj.without_timings().model_calls[0]  # reruns write the same bytes
    assert any(m.role == "assistant" and m.content == "I can help with that." for m in traj.messages)
    assert traj.agent_usage.prompt_tokens == 7 * len(traj.model_calls)  # the tokens the model reported
    assert '"model_calls"' in traj.model_dump_json() and not result.verdict.infra_error


def test_the_model_failing_is_infrastructure_not_the_programs_failure():
    from tests.programs.scripted_model import ScriptedModel, status

    with ScriptedModel([status(503, "overloaded")]) as model:
        result = play(f"program:{HELPERS}:AsksModel,base_url={model.base_url},model=smol")
    assert result.trajectory.infra_error and result.verdict.infra_error
    assert "503" in (result.trajectory.error or "") or "overloaded" in (result.trajectory.error or "")
