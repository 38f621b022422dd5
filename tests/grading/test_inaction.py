"""The inaction mode: an agent that never acts, refuses a request the policy allows, or gives up is named for it;
the oracle's own refusals, a claim with no write and a misread refusal are not."""

from __future__ import annotations

from pipeline.agents.scripted.flaws import FlawConfig
from pipeline.domains.retail.flawed import FlawedAgent, FlawedEpisode
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.domains.retail.tools import WRITE_TOOLS
from pipeline.grading.failure_modes import analyze
from pipeline.grading.grader import grade
from pipeline.grading.inaction import Served, acted, left_undone, to_serve
from pipeline.grading.timeline import build_timeline
from pipeline.rollout.runner import run_episode
from pipeline.rollout.trajectory import Message
from pipeline.users.scripted import ScriptedUser
from tests.agents.scripted_helpers import small_tasks, small_world


class Silent:
    """A model that never calls a tool and turns every request down (what SmolLM2 does before training)."""

    name = "silent"

    def start(self, info):
        return self

    def act(self, messages):
        return Message(role="assistant", content="I'm sorry, but I can't assist with that.")


class Planted:
    """The retail flawed agent with one chosen flaw on one request."""

    name = "planted"

    def __init__(self, i: int, mode: str, variant: str) -> None:
        self.flaws = {i: (mode, variant)}

    def start(self, info):
        return FlawedEpisode(info, self.flaws, seed=0)


def _writes(task) -> list[int]:
    return sorted({a.request for a in task.gold_actions if a.name in WRITE_TOOLS and a.request is not None})


def _analysis(task, agent):
    world = small_world()
    traj = run_episode(world, task, agent, ScriptedUser())
    verdict = grade(world, task, traj)
    return traj, verdict, analyze(task, traj, verdict)


def test_an_agent_that_never_calls_a_tool_is_named_inaction_where_it_first_spoke():
    task = next(t for t in small_tasks() if _writes(t))
    traj, verdict, a = _analysis(task, Silent())
    assert not verdict.passed and a.modes == ["inaction"] and a.dominant == "inaction"
    first = next(i for i, m in enumerate(traj.messages) if m.role == "assistant")
    assert a.evidence["inaction"][0].startswith(f"message {first}: never_acted: made no tool call at all")


def test_each_planted_inaction_variant_is_named_with_its_kind_and_nothing_else():
    kinds = {"wrongful_refusal": "refused", "give_up": "gave_up", "no_action": "gave_up"}
    seen = set()
    for task in small_tasks()[:40]:
        writes, last = _writes(task), len(task.user_script.requests) - 1
        for i in writes:
            for variant in ("wrongful_refusal", *(("give_up", "no_action") if i == last else ())):
                traj, verdict, a = _analysis(task, Planted(i, "inaction", variant))
                assert not verdict.passed and a.modes == ["inaction"], (task.id, variant, a)
                assert f": {kinds[variant]}: " in a.evidence["inaction"][0], (task.id, variant, a.evidence)
                seen.add(variant)
    assert seen == set(kinds)


def test_the_oracle_refusing_what_policy_forbids_is_not_inaction_even_when_the_trial_failed():
    refusing = [t for t in small_tasks() if any(r.expect == "refused" for r in t.user_script.requests)]
    assert refusing
    world = small_world()
    for task in refusing[:15]:
        traj = run_episode(world, task, OracleAgent(), ScriptedUser())
        verdict = grade(world, task, traj)
        forced = analyze(task, traj, verdict.model_copy(update={"passed": False}))
        assert "inaction" not in forced.modes, (task.id, forced)


def test_a_claim_with_no_write_and_a_misread_refusal_are_their_modes_not_inaction():
    for task in small_tasks()[:30]:
        for i in _writes(task):
            _, _, a = _analysis(task, Planted(i, "plan_adherence", "no_write"))
            assert "inaction" not in a.modes and "plan_adherence" in a.modes, (task.id, a)
            req = task.user_script.requests[i]
            if req.order_id and req.intent != "modify_user_address":
                _, _, a = _analysis(task, Planted(i, "misread", "refuse"))
                assert "inaction" not in a.modes and "misread" in a.modes, (task.id, a)


def test_a_request_counts_as_acted_on_by_a_write_naming_its_record_or_its_tool():
    task = next(t for t in small_tasks() if len(_writes(t)) >= 1 and t.user_script.requests[_writes(t)[0]].order_id)
    i = _writes(task)[0]
    served = next(r for r in to_serve(task, WRITE_TOOLS) if r.index == i)
    assert served.about == task.user_script.requests[i].order_id
    world = small_world()
    oracle = run_episode(world, task, OracleAgent(), ScriptedUser())
    assert acted(served, task, build_timeline(oracle), oracle)
    silent = run_episode(world, task, Silent(), ScriptedUser())
    assert not acted(served, task, build_timeline(silent), silent)
    assert left_undone(grade(world, task, silent)) and not left_undone(grade(world, task, oracle))
    whole = Served(None, frozenset({"cancel_pending_order"}))
    assert acted(whole, task, build_timeline(oracle), oracle) and not acted(whole, task, build_timeline(silent), silent)


def test_the_flawed_agent_plants_inaction_at_its_rate_and_reports_it():
    agent = FlawedAgent(FlawConfig(rates={"inaction": 1.0}))
    task = next(t for t in small_tasks() if _writes(t))
    planted = agent.planted_variants(task, 0)
    assert [m for m, _ in planted.values()] == ["inaction"] and agent.planted(task, 0) == ["inaction"]
