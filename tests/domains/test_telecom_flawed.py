"""Telecom's flawed agent plants the failure modes (those dual control adds, and plan adherence and invention on the
carrier's side), and the failure-mode analysis names each one for what it is (the fast version of
`bench/bench_failure_modes.py --domain telecom`)."""

from __future__ import annotations

import pytest

from pipeline.agents.scripted.flaws import FlawConfig
from pipeline.domains.telecom.flawed import PLANTED, TelecomFlawedAgent, TelecomFlawedEpisode, _variants
from pipeline.grading.dual_control import DUAL_CONTROL_MODES, PARENT
from pipeline.grading.failure_modes import FAILURE_MODES, analyze
from pipeline.grading.grader import grade
from pipeline.grading.mode_recovery import score
from pipeline.rollout.runner import Limits, run_episode
from pipeline.users.registry import make_user

LIMITS = Limits(max_turns=60)


@pytest.fixture(scope="module")
def loaded():
    from pipeline.domains.telecom.domain import TELECOM
    from tests.needs import need_tau2

    return TELECOM.tau2_importer().load(need_tau2("telecom"))


class Forced:
    name = "forced"

    def __init__(self, mode: str, variant: str) -> None:
        self.flaws = {0: (mode, variant)}

    def start(self, info):
        return TelecomFlawedEpisode(info, self.flaws, seed=0)


def _run(world, task, agent, trial: int = 0):
    traj = run_episode(world, task, agent, make_user("scripted"), trial=trial, limits=LIMITS)
    verdict = grade(world, task, traj, limits=LIMITS)
    return traj, verdict, analyze(task, traj, verdict)


def test_each_planted_variant_is_named_alone_and_dominant(loaded):
    world, tasks = loaded
    seen: dict[str, int] = {}
    for task in tasks[::3]:
        for mode in PLANTED:
            for variant in _variants(mode, task):
                _, verdict, a = _run(world, task, Forced(mode, variant))
                assert not verdict.passed, (task.id, variant)
                parent = PARENT.get(mode, mode)
                assert a.modes == [parent] and a.dominant == parent, (task.id, variant, a)
                assert a.dual_control == ([mode] if mode in DUAL_CONTROL_MODES else []), (task.id, variant, a)
                assert parent != mode or a.evidence[mode]
                assert parent == mode or any(mode in e for e in a.evidence[parent])
                seen[variant] = seen.get(variant, 0) + 1
    expected = {"claim_early", "airplane_on", "data_off", "network_2g", "toggle_airplane_mode", "skip_confirmation"}
    assert expected | {"fabricate"} <= set(seen), seen


def test_transfer_tasks_get_no_flaw_and_the_unflawed_trials_are_the_oracles(loaded):
    world, tasks = loaded
    agent = TelecomFlawedAgent()
    transfer = [t for t in tasks if any(a.name == "transfer_to_human_agents" for a in t.gold_actions)]
    assert transfer and all(_variants(m, t) == [] for t in transfer for m in PLANTED)
    for task in tasks[:10]:
        assert agent.planted(task, 0) == []
        _, verdict, a = _run(world, task, agent)
        assert verdict.tau2.reward == 1.0 and a.dual_control == []


def test_recovery_of_planted_modes_on_a_small_run(loaded):
    world, tasks = loaded
    agent = TelecomFlawedAgent(FlawConfig(rates=dict.fromkeys(PLANTED, 0.25), seed=5))
    rows = []
    for task in tasks[:60]:
        for trial in range(2):
            _, verdict, a = _run(world, task, agent, trial)
            rows.append((agent.planted(task, trial), [*a.modes, *a.dual_control], a.dominant, verdict.passed))
    report = score(rows, (*FAILURE_MODES, *DUAL_CONTROL_MODES))
    for mode, s in report.per_mode.items():
        assert s.planted >= 5, (mode, s)
        assert s.precision >= 0.9 and s.recall >= 0.9, (mode, s)
    assert report.per_mode["inaction"].precision == report.per_mode["inaction"].recall == 1.0
    assert report.false_modes_on_clean == 0


def test_the_agent_spec_plants_the_dual_control_modes_at_their_modes_rates():
    from pipeline.agents.registry import make_agent
    from pipeline.world.registry import resolve_domain

    telecom = resolve_domain("telecom")
    rates = make_agent("flawed", telecom).config.rates
    assert set(rates) == set(PLANTED) | {"misread"} and len(set(rates.values())) == 1
    assert make_agent("flawed:misread=0.3,unverified_fix=0.1", telecom).config.rates == {
        "misread": 0.3,
        "wrong_instruction": 0.3,
        "unverified_fix": 0.1,
    }
