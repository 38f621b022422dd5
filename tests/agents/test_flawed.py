"""Flawed agents: deterministic planting at configured rates, and each planted flaw fails for its own reason."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pipeline.domains.retail.flawed import MODES, FlawConfig, FlawedAgent, FlawedEpisode, plan
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.domains.retail.tools import WRITE_TOOLS
from pipeline.grading.grader import grade
from pipeline.rollout.runner import run_episode
from pipeline.users.scripted import ScriptedUser
from tests.agents.scripted_helpers import small_tasks, small_world, strip_timings, unsupported_write_values

# variant → (components that must fail, components that must pass)
REASONS = {
    "skip_confirmation": ({"static.confirmation"}, {"state", "static.authorization"}),
    "no_write": ({"state"}, {"static.confirmation", "static.authorization", "static.policy_violation"}),
    "write_before_auth": ({"static.authorization"}, {"state", "static.confirmation"}),
    "fabricate": ({"state"}, {"static.confirmation", "static.authorization"}),
    "refuse": ({"state"}, {"static.confirmation", "static.authorization", "static.policy_violation"}),
    "wrong_write": ({"state", "static.policy_violation"}, {"static.confirmation", "static.authorization"}),
}
MODE_OF = {
    "skip_confirmation": "plan_adherence",
    "no_write": "plan_adherence",
    "write_before_auth": "plan_adherence",
    "fabricate": "invention",
    "refuse": "misread",
    "wrong_write": "misread",
}


class Forced:
    """An agent with exactly one chosen flaw on one request."""

    name = "forced"

    def __init__(self, i: int, variant: str) -> None:
        self.flaws = {i: (MODE_OF[variant], variant)}

    def start(self, info):
        return FlawedEpisode(info, self.flaws, seed=0)


def test_config_is_strict():
    with pytest.raises(ValidationError):
        FlawConfig(rates={"hallucination": 0.5})
    with pytest.raises(ValidationError):
        FlawConfig(rates={"invention": 1.5})
    with pytest.raises(ValidationError):
        FlawConfig(invention=0.5)


def test_planting_is_deterministic_and_only_where_a_write_is():
    tasks = small_tasks()
    agent = FlawedAgent(FlawConfig(rates=dict(plan_adherence=0.4, invention=0.4, misread=0.4), seed=5))
    again = FlawedAgent(FlawConfig(rates=dict(plan_adherence=0.4, invention=0.4, misread=0.4), seed=5))
    other = FlawedAgent(FlawConfig(rates=dict(plan_adherence=0.4, invention=0.4, misread=0.4), seed=6))
    table = [agent.planted(t, k) for t in tasks for k in range(4)]
    assert table == [again.planted(t, k) for t in tasks for k in range(4)]
    assert table != [other.planted(t, k) for t in tasks for k in range(4)]
    for t in tasks:
        if not any(a.name in WRITE_TOOLS for a in t.gold_actions):
            assert all(agent.planted(t, k) == [] for k in range(4)), t.id


def test_rates_are_respected_and_zero_rates_give_the_oracle():
    tasks = [t for t in small_tasks() if any(a.name in WRITE_TOOLS for a in t.gold_actions)]
    config = FlawConfig(rates={"invention": 0.3}, seed=1)
    share = sum("invention" in FlawedAgent(config).planted(t, k) for t in tasks for k in range(8)) / (8 * len(tasks))
    assert 0.2 < share < 0.4
    assert all(
        FlawedAgent(FlawConfig(rates={"plan_adherence": 1.0})).planted(t, 0) == ["plan_adherence"] for t in tasks
    )
    world, task = small_world(), tasks[0]
    clean = run_episode(world, task, FlawedAgent(FlawConfig()), ScriptedUser())
    oracle = run_episode(world, task, OracleAgent(), ScriptedUser())
    assert [m.content for m in clean.messages] == [m.content for m in oracle.messages]


def test_each_variant_fails_the_verdict_for_its_own_reason():
    world = small_world()
    tried = dict.fromkeys(REASONS, 0)
    for task in small_tasks():
        reqs = task.user_script.requests
        for i, req in enumerate(reqs):
            if not any(a.request == i and a.name in WRITE_TOOLS for a in task.gold_actions):
                continue
            for variant, (fail, ok) in REASONS.items():
                n = len(task.user_script.requests)
                if not any(v == variant for mode in MODES for v in _variants(mode, i, req, n)):
                    continue
                traj = run_episode(world, task, Forced(i, variant), ScriptedUser())
                verdict = grade(world, task, traj)
                failed = set(verdict.failed_components)
                assert not verdict.passed and fail <= failed and not (ok & failed), (task.id, variant, failed)
                invented = unsupported_write_values(traj.messages)
                assert bool(invented) == (variant == "fabricate"), (task.id, variant, invented)
                if variant == "no_write":
                    assert {d.kind for d in verdict.diffs} == {"missing_change"}
                if variant == "refuse":
                    writes = [c for c in traj.tool_calls() if c.name in WRITE_TOOLS]
                    assert all(c.arguments.get("order_id") != req.order_id for c in writes)
                tried[variant] += 1
    assert all(n >= 3 for n in tried.values()), tried


def _variants(mode, i, req, n):
    from pipeline.domains.retail.flawed import _variants as variants

    return variants(mode, i, req, n)


def test_planted_trials_fail_and_clean_trials_pass():
    world = small_world()
    agent = FlawedAgent(FlawConfig(rates=dict(plan_adherence=0.25, invention=0.25, misread=0.25), seed=2))
    planted = 0
    for task in small_tasks():
        for trial in range(2):
            verdict = grade(world, task, run_episode(world, task, agent, ScriptedUser(), trial=trial))
            assert verdict.passed == (agent.planted(task, trial) == []), (task.id, trial)
            planted += bool(agent.planted(task, trial))
    assert planted >= 20


def test_flawed_trajectories_are_deterministic():
    world = small_world()
    agent = FlawedAgent(FlawConfig(rates=dict(plan_adherence=0.5, invention=0.5, misread=0.5), seed=3))
    for task in small_tasks()[:20]:
        a = run_episode(world, task, agent, ScriptedUser(), trial=1)
        b = run_episode(world, task, agent, ScriptedUser(), trial=1)
        assert strip_timings(a) == strip_timings(b)
    assert plan(agent.config, small_tasks()[0], 1) == agent.planted_variants(small_tasks()[0], 1)
