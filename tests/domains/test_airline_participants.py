"""Airline's scripted participants: generated tasks verify in the world, the oracle solves them, the flawed
agent's planted failure modes are what the classifier names, and a missing capability is named."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from pipeline.agents.registry import make_agent
from pipeline.dataset.replay import replay_gold
from pipeline.dataset.task import NoWritesCheck, Request
from pipeline.domains.airline.vocabulary import WRITE_INTENTS
from pipeline.grading.failure_modes import FAILURE_MODES, analyze
from pipeline.grading.grader import grade
from pipeline.grading.mode_recovery import score
from pipeline.rollout.runner import run_episode
from pipeline.users.scripted import ScriptedUser
from pipeline.world.domain import CAPABILITIES, Domain, DomainCapabilityError
from pipeline.world.registry import load_world, resolve_domain
from pipeline.world.tools import ToolRegistry

AIRLINE = resolve_domain("airline")


@pytest.fixture(scope="module")
def world(tau2_airline_dir):
    return load_world(str(tau2_airline_dir), "airline")


@pytest.fixture(scope="module")
def tasks(world):
    return AIRLINE.require("tasks")(world, 44, seed=0)


def test_tasks_cover_every_write_and_the_refusals_and_their_gold_replays(world, tasks):
    assert len(tasks) == 44
    writes = Counter(a.name for t in tasks for a in t.gold_actions if a.name in WRITE_INTENTS)
    assert set(writes) == set(WRITE_INTENTS)  # book, cancel, flights, bags, passengers, certificate
    refusals = [t for t in tasks if all(r.expect == "refused" for r in t.user_script.requests)]
    templates = {t.provenance.template for t in refusals}
    assert {"cancel_not_allowed", "basic_economy_change", "remove_bag", "add_passenger"} <= templates
    assert all(t.checks == [NoWritesCheck()] for t in refusals)
    for t in tasks:
        session = replay_gold(world, t)
        assert all(e.ok for e in session.log), t.id
        assert t.gold_actions[0].name == "get_user_details" and t.user_script.known.user_id == t.customer_user_id
    assert [t.model_dump_json() for t in AIRLINE.require("tasks")(world, 44, seed=0)] == [
        t.model_dump_json() for t in tasks
    ]


def test_a_refused_cancellation_is_refused_by_the_world_too(world, tasks):
    from pipeline.world.tools import execute

    t = next(t for t in tasks if t.provenance.template == "cancel_not_allowed")
    session = replay_gold(world, t)
    rid = t.user_script.requests[0].record_id
    assert world.table("reservations")[rid].insurance == "no"
    assert not execute(session, "cancel_reservation", {"reservation_id": rid}).ok


def test_record_id_is_left_out_of_the_json_when_unset():
    retail = Request(intent="cancel", utterance="u", order_id="#W1")
    assert "record_id" not in retail.model_dump_json() and "record_id" not in retail.model_dump()
    airline = Request(intent="cancel", utterance="u", record_id="ZFA04Y")
    assert json.loads(airline.model_dump_json())["record_id"] == "ZFA04Y" and airline.about == "ZFA04Y"
    assert Request.model_validate_json(airline.model_dump_json()) == airline


def test_the_oracle_solves_every_task_and_the_spec_takes_the_domains_oracle(world, tasks):
    oracle = AIRLINE.require("oracle")()
    failed = [t.id for t in tasks if not grade(world, t, run_episode(world, t, oracle, ScriptedUser())).passed]
    assert failed == []
    by_spec = make_agent("oracle")
    assert by_spec.name == "oracle"
    traj = run_episode(world, tasks[0], by_spec, ScriptedUser())
    assert grade(world, tasks[0], traj).passed and traj.domain == "airline"
    assert traj.messages[2].content == "My user id is " + tasks[0].customer_user_id + "."  # airline phrasing


def test_planted_failure_modes_are_the_ones_detected(world, tasks):
    # misread fits fewer requests (a booking, a multi-segment flight change, ...) and is planted last: more often
    agent = AIRLINE.require("flaws")({"plan_adherence": 0.3, "invention": 0.3, "misread": 1.0, "inaction": 0.3}, seed=3)
    rows, variants = [], Counter()
    for t in tasks:
        for trial in range(3):
            traj = run_episode(world, t, agent, ScriptedUser(), trial=trial)
            verdict = grade(world, t, traj)
            a = analyze(t, traj, verdict)
            rows.append((agent.planted(t, trial), a.modes, a.dominant, verdict.passed))
            variants.update(v for _, v in agent.planted_variants(t, trial).values())
    report = score(rows, FAILURE_MODES)
    for mode, s in report.per_mode.items():
        assert s.planted >= 5, mode
        assert s.precision >= 0.9 and s.recall >= 0.9, (mode, s)
    assert report.per_mode["inaction"].precision == report.per_mode["inaction"].recall == 1.0
    assert {"skip_confirmation", "no_write", "fabricate", "wrongful_refusal"} <= set(variants)
    assert any(v in variants for v in ("wrong_total", "drop_segments", "passenger_count", "bags_from_zero"))
    clean = [r for r in rows if not r[0]]
    assert clean and all(passed for *_, passed in clean)


class Bare(Domain):
    """A plug-in domain with the required parts only."""

    name, tables, tools = "bare", {}, ToolRegistry()

    def load(self, ref):
        return None

    def policy(self):
        return ""

    def owner(self, table, record):
        return None


def test_a_missing_capability_is_named():
    for capability in ("tasks", "oracle", "flaws", "user_phrasing"):
        with pytest.raises(DomainCapabilityError, match=f"'bare' does not provide '{capability}'"):
            Bare().require(capability, needed_for="the failure-mode proof")
    assert all(AIRLINE.provides(c) for c in CAPABILITIES)  # airline provides every capability
