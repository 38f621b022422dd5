"""Done when: on τ²-bench retail's 114 tasks, an agent played as a program over MCP gives the verdicts the same
agent gives in process. The scripted customer ends a τ²-bench task at once (its tasks carry no scripted requests), so
the agent and the customer here say the task's gold conversation (`pipeline.tau2.gold`): authentication, a question
before each write, the gold calls, what must be communicated; the customer's stop ends it. The quick tier plays a
sample; the slow tier all 114 tasks, and `agentloop measure` with the oracle as a program on them."""

from __future__ import annotations

import json

import pytest

from pipeline.agents import make_agent
from pipeline.tau2.importer import import_tau2
from pipeline.trials.trial import run_trial
from pipeline.world import load_world
from tests.programs import programs

PROGRAM = "program:tests.programs.programs:GoldProgram"


@pytest.fixture(scope="module")
def retail(tau2_dir):
    world = load_world(str(tau2_dir))
    programs.GOLD_WORLD[:] = [world]
    return world, import_tau2(tau2_dir).tasks


def record(trajectory) -> dict:
    """A trajectory without its clock, agent name and call ids (the hub numbers a program's calls its own way)."""
    data = json.loads(trajectory.without_timings().model_dump_json(exclude={"agent", "tool_loop"}))
    for message in data["messages"]:
        message.pop("tool_call_id", None)
        for call in message.get("tool_calls", []):
            call.pop("id"), call.pop("raw_arguments", None)
    return data


def same_verdicts(world, tasks) -> int:
    """Play every task in process and as a program (trial 0 and 1); the verdicts must be equal. How many passed."""
    program = make_agent(PROGRAM)
    passed = 0
    for i, task in enumerate(tasks):
        trial = i % 2
        direct = run_trial(world, task, programs.GoldAgent(world), programs.GoldUser(world), trial)
        served = run_trial(world, task, program, programs.GoldUser(world), trial)
        assert served.trajectory.tool_loop == "agent"
        assert served.verdict == direct.verdict, task.id
        assert record(served.trajectory) == record(direct.trajectory), task.id
        passed += direct.verdict.passed
    return passed


def test_a_sample_of_tau2_retail_tasks_gives_the_same_verdicts_as_a_program(retail):
    world, tasks = retail
    sample = tasks[::12]
    passed = same_verdicts(world, sample)
    assert passed >= len(sample) // 2, "the gold conversations pass: the comparison is of real episodes"


@pytest.mark.slow
def test_all_114_tau2_retail_tasks_give_the_same_verdicts_as_a_program(retail):
    world, tasks = retail
    assert len(tasks) == 114
    same_verdicts(world, tasks)
