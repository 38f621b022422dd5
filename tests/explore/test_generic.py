"""The generic path: tasks, synthesis and scripted participants grown from a domain's tools and world alone.

`<domain>+generic` switches a domain's own kit and scripted participants off; the studio (tests/domains/toy) and
airline run through it the way a domain that never wrote them does."""

from __future__ import annotations

import pickle

import pytest

from pipeline.authoring.kit import check_kit
from pipeline.dataset.replay import replay_gold
from pipeline.explore.coverage import coverage
from pipeline.explore.generic_kit import GenericKit
from pipeline.explore.probe import world_model
from pipeline.grading.failure_modes import FAILURE_MODES, analyze
from pipeline.grading.grader import grade
from pipeline.grading.mode_recovery import score
from pipeline.rollout.runner import run_episode
from pipeline.synth.config import SynthConfig
from pipeline.synth.synthesize import Synthesizer
from pipeline.target import Targets, split_budget
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import domain_spec, load_world, resolve_domain
from pipeline.world.without_kit import WithoutKit
from tests.domains.toy.synthesis import KIT

STUDIO = "tests.domains.toy.domain:TOY+generic"


def _proof(spec: str, ref: str, n: int, trials: int = 2) -> tuple[list, dict, int]:
    """Generic tasks of a world: (tasks, per-mode precision/recall report, tasks the oracle solved)."""
    world = load_world(ref, spec)
    domain = world.domain
    tasks = domain.require("tasks")(world, n, seed=0)
    oracle = domain.require("oracle")()
    flawed = domain.require("flaws")(dict.fromkeys(FAILURE_MODES, 0.3), seed=0)
    solved = sum(grade(world, t, run_episode(world, t, oracle, ScriptedUser())).passed for t in tasks)
    rows = []
    for t in tasks:
        for trial in range(trials):
            traj = run_episode(world, t, flawed, ScriptedUser(), trial=trial)
            verdict = grade(world, t, traj)
            analysis = analyze(t, traj, verdict)
            rows.append((flawed.planted(t, trial), analysis.modes, analysis.dominant, verdict.passed))
    return tasks, score(rows, FAILURE_MODES).per_mode, solved


def test_a_domain_without_its_own_gets_the_generic_capabilities():
    domain = resolve_domain(STUDIO)
    assert isinstance(domain, WithoutKit) and domain.name == "studio+generic"
    kit = domain.require("synthesis")
    assert isinstance(kit, GenericKit) and kit is not KIT
    check_kit(domain, kit)  # every write tool has a template that carries it out
    writes = {f"{w}{x}" for w in ("cancel_booking", "modify_user_zip") for x in ("", "__refused", "__other_customer")}
    reads = ("get_user_details", "get_booking_details", "get_class_details")
    questions = {f"{x}{r}" for r in reads for x in ("ask__", "unservable__")}
    assert set(kit.taxonomy) == writes | questions
    assert resolve_domain("tests.domains.toy.domain:TOY").require("synthesis") is KIT  # a kit of its own wins
    assert domain_spec(domain) == STUDIO and pickle.loads(pickle.dumps(domain)) is domain
    world = load_world("gen-0", STUDIO)
    assert world.domain is domain and world.name == "gen-0"


def test_generic_tasks_replay_the_oracle_solves_them_and_flaws_are_recovered():
    tasks, per_mode, solved = _proof(STUDIO, "gen-0", 36)
    assert len(tasks) == 36 and solved == 36
    world = load_world("gen-0", STUDIO)
    assert all(e.ok for t in tasks for e in replay_gold(world, t).log)  # every gold action succeeds
    assert {r.expect for t in tasks for r in t.user_script.requests} == {"done", "refused"}
    for mode, s in per_mode.items():
        assert s.planted > 0 and s.precision >= 0.9 and s.recall >= 0.9, (mode, s)
    assert per_mode["inaction"].precision == per_mode["inaction"].recall == 1.0
    cov = coverage(world_model(world), tasks)
    assert cov["writes_covered"] == "2/2" and cov["refusals_covered"] == "3/3"


def test_synthesis_evolves_generic_tasks():
    world = load_world("gen-7", STUDIO)
    targets = Targets(budget=24, modes=split_budget(dict.fromkeys(FAILURE_MODES, 1.0), 24))
    result = Synthesizer(world, targets, SynthConfig(max_generations=4)).run()
    dials = result.manifest["counts"]["by_dial"]
    assert result.tasks and max(t.provenance.depth for t in result.tasks) >= 2
    assert dials["chained"] and dials["pushback"] and dials["underspecified"]
    assert result.manifest["flaw_check"]  # the generic flawed agent fails what it targets


@pytest.mark.slow
def test_airline_with_its_kit_switched_off(tau2_airline_dir):
    tasks, per_mode, solved = _proof("airline+generic", str(tau2_airline_dir), 30)
    assert solved == len(tasks) >= 24
    for mode, s in per_mode.items():
        assert s.planted > 0 and s.precision >= 0.9 and s.recall >= 0.9, (mode, s)
    cov = coverage(world_model(load_world(str(tau2_airline_dir), "airline+generic")), tasks)
    assert cov["conditional"] and cov["underspecified"] > 0  # airline's branches turn on a reservation field
    assert cov["unservable"] > 0  # a reservation field no write changes (a booking creates, it changes none)


def test_a_question_must_be_answered_from_the_records():
    from pipeline.dataset.task import CommunicatedCheck
    from pipeline.grading.task_checks import evaluate_check

    world = load_world("library", "tests.domains.library.domain:LIBRARY")
    tasks = world.domain.require("tasks")(world, 40, seed=0)
    asked = [t for t in tasks if t.provenance.template == "ask__get_loan_details"]
    assert asked and all(any(c.kind == "communicated" for c in t.checks) for t in asked)
    oracle = world.domain.require("oracle")()
    assert all(grade(world, t, run_episode(world, t, oracle, ScriptedUser())).passed for t in asked)
    check = CommunicatedCheck(values=["overdue"])
    assert evaluate_check(check, world, [], {}, ["Loan L0001 is overdue."]).passed
    assert not evaluate_check(check, world, [], {}, ["I have checked your loan."]).passed


def test_a_request_no_tool_serves_is_refused_with_that_reason():
    """A change to a field no write changes and that describes the record (a claim's peril); the library's loans
    have none (a loan's book id names a book), so it asks none."""
    library = load_world("library", "tests.domains.library.domain:LIBRARY")
    assert not [t for t in library.domain.require("tasks")(library, 40, seed=0) if "unservable" in t.id]
    world = load_world("homeinsure", "tests.domains.homeinsure.domain:HOMEINSURE")
    tasks = world.domain.require("tasks")(world, 40, seed=0)
    unservable = [t for t in tasks if t.provenance.template == "unservable__get_claim"]
    assert unservable and all(t.user_script.requests[0].expect == "refused" for t in unservable)
    oracle = world.domain.require("oracle")()
    for t in unservable:
        traj = run_episode(world, t, oracle, ScriptedUser())
        assert grade(world, t, traj).passed
        assert any("no tool can change" in (m.content or "") for m in traj.messages if m.role == "assistant")
    cov = coverage(world_model(world), tasks)
    asked = [r for t in tasks for r in t.user_script.requests if r.intent.startswith("unservable:")]
    assert cov["unservable"] == len(asked) >= len(unservable) and cov["questions"] > 0


def test_a_conditional_request_follows_the_branch_the_record_selects():
    """'If its status is active, renew it; otherwise return it': the gold is the branch the loan's state (as the
    read tool shows it) selects, it replays, the oracle solves it, and taking the other branch fails the task."""
    from pipeline.dataset.branching import branches
    from pipeline.dataset.replay import replay_actions
    from pipeline.explore.conditional import shown

    world = load_world("library", "tests.domains.library.domain:LIBRARY")
    kit = world.domain.require("synthesis")
    assert {"if__renew_loan", "if__return_loan"} <= set(kit.taxonomy)
    tasks = world.domain.require("tasks")(world, 60, seed=0)
    conditional = [t for t in tasks if t.provenance.template.startswith("if__")]
    assert len(conditional) >= 3
    # 'if it is active or overdue, return it; otherwise renew it': renewing a returned loan never succeeds
    assert {t.provenance.template for t in conditional} == {"if__renew_loan"}
    oracle, ctx = world.domain.require("oracle")(), kit.ground(world)
    taken = set()
    for t in conditional:
        req = t.user_script.requests[0]
        first, other = branches(req.intent)
        write = t.gold_actions[-1]
        assert write.name in (first, other) and req.record_id in req.utterance or t.provenance.dials["underspecified"]
        record = shown(ctx, t.customer_user_id, "loans", req.record_id)
        field, _, values = req.utterance.partition(": if its ")[2].partition(", ")[0].partition(" is ")
        holds = str(record[field.replace(" ", "_")]) in values.split(" or ")
        assert write.name == (first if holds else other)  # the branch the state selects
        taken.add(write.name == first)
        assert all(e.ok for e in replay_gold(world, t).log)
        assert grade(world, t, run_episode(world, t, oracle, ScriptedUser())).passed
        gold_end = replay_actions(world, t.gold_actions).changed()
        wrong = write.model_copy(update={"name": other if write.name == first else first})
        assert replay_actions(world, [*t.gold_actions[:-1], wrong]).changed() != gold_end  # the other branch fails
    assert taken == {True, False}  # both branches asked for
    cov = coverage(world_model(world), tasks)
    asked = [r for t in tasks for r in t.user_script.requests if branches(r.intent)]  # alone or in a pair
    assert sum(sum(c.values()) for c in cov["conditional"].values()) == len(asked) > len(conditional)


def test_an_unsaid_record_is_asked_for_first():
    """Held-out generic tasks leave the record unsaid at the kit's rate; the oracle asks which one, then solves."""
    world = load_world("library", "tests.domains.library.domain:LIBRARY")
    tasks = world.domain.require("tasks")(world, 40, seed=0)
    under = [t for t in tasks if t.provenance.dials.get("underspecified")]
    assert under and all(r.record_id not in r.utterance for t in under for r in t.user_script.requests
                         if r.record_id)  # fmt: skip
    oracle = world.domain.require("oracle")()
    for t in under:
        traj = run_episode(world, t, oracle, ScriptedUser())
        assert grade(world, t, traj).passed
        assert any("Which one is this about" in (m.content or "") for m in traj.messages if m.role == "assistant")
    assert coverage(world_model(world), tasks)["underspecified"] == len(under)


def test_the_wrong_branch_of_a_conditional_request_is_named_misread():
    """The flawed agent reads the record, then writes the branch its state does not select: the rule on the
    request's recorded condition names it misread (not merely a refused write claimed done)."""
    from pipeline.agents.scripted.flaws import FlawConfig
    from pipeline.dataset.branching import condition
    from pipeline.explore.agents import GenericFlawed, plan, untaken
    from pipeline.grading.branches import branch_findings
    from pipeline.grading.timeline import build_timeline

    world = load_world("library", "tests.domains.library.domain:LIBRARY")
    tasks = world.domain.require("tasks")(world, 60, seed=0)
    single = [t for t in tasks if t.provenance.template.startswith("if__") and len(t.user_script.requests) == 1]
    assert single and all(condition(t.user_script.requests[0]) for t in single)
    config = FlawConfig(rates={"misread": 1.0}, seed=0)
    flawed = GenericFlawed(world.domain.tools, config)
    oracle = world.domain.require("oracle")()
    for t in single:
        assert plan(config, t, 0, flawed.writes) == {0: ("misread", "wrong_branch")}
        other = untaken(t.user_script.requests[0], t.gold_actions[-1], world.domain.tools)
        assert other is not None and other.name != t.gold_actions[-1].name
        traj = run_episode(world, t, flawed, ScriptedUser())
        verdict = grade(world, t, traj)
        assert not verdict.passed and "misread" in analyze(t, traj, verdict).modes
        assert [f.mode for f in branch_findings(t, build_timeline(traj))] == ["misread"]
        clean = run_episode(world, t, oracle, ScriptedUser())
        assert not branch_findings(t, build_timeline(clean))  # the branch the state selects is no evidence
