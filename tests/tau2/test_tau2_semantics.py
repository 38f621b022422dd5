"""τ²-bench's evaluator semantics point by point: perturbed conversations on both domains, terminations, the
reward basis, the action share, the strict replay, and criteria the reward cannot reproduce."""

from __future__ import annotations

import json

import pytest

from pipeline.dataset.task import Evaluation
from pipeline.grading.tau2_criteria import Tau2CriteriaError, apply_criteria, with_criteria
from pipeline.grading.tau2_reward import action_matches, tau2_reward
from pipeline.rollout.trajectory import USER_ENDED
from pipeline.tau2.gold import gold_actions, gold_conversation, perturb
from pipeline.tau2.results_file import simulation_of
from pipeline.world.registry import resolve_domain
from pipeline.world.tools import execute

REPLY = ("Sounds good, please do that.",)
# τ²-bench's reward of each conversation: retail's basis is DB and NL_ASSERTION (no judge here), airline's DB and
# COMMUNICATE; an unsaid value costs only where COMMUNICATE is in the basis.
EXPECTED = {
    ("retail", "2"): {
        "missing_write": "DB",
        "wrong_argument": "DB",
        "extra_write": "DB",
        "info_not_communicated": None,
    },
    ("airline", "7"): {
        "missing_write": "DB",
        "wrong_argument": "DB",
        "extra_write": "DB",
        "info_not_communicated": "COMMUNICATE",
    },
}


@pytest.fixture(scope="module", params=["retail", "airline"])
def loaded(request):
    from tests.needs import need_tau2

    path = need_tau2(request.param)
    world, tasks = resolve_domain(request.param).require("tau2_importer").load(path)
    raw = json.loads((path / "tasks.json").read_text())
    return request.param, world, {t.id: t for t in apply_criteria(tasks, raw)}


def _task(loaded):
    name, world, tasks = loaded
    task_id = next(t for (n, t) in EXPECTED if n == name)
    return name, world, tasks[task_id], EXPECTED[(name, task_id)]


def test_gold_scores_1_and_each_perturbation_what_tau2_gives(loaded):
    name, world, task, expected = _task(loaded)
    assert tau2_reward(world, task, gold_conversation(world, task, REPLY)).reward == 1.0
    for how, component in expected.items():
        result = tau2_reward(world, task, perturb(world, task, how, REPLY))
        assert (result.reward, result.failed) == ((0.0, [component]) if component else (1.0, [])), (name, how)


def test_max_steps_scores_0_before_any_check(loaded):
    _, world, task, _ = _task(loaded)
    result = tau2_reward(world, task, perturb(world, task, "max_steps", REPLY))
    assert result.reward == 0.0 and result.terminated_early and result.checks == []


@pytest.mark.parametrize("termination", USER_ENDED)
def test_every_user_signal_is_a_user_stop_and_evaluated(loaded, termination):
    _, world, task, _ = _task(loaded)
    result = tau2_reward(world, task, gold_conversation(world, task, REPLY, termination=termination))
    assert result.passed and not result.terminated_early
    assert simulation_of(gold_conversation(world, task, REPLY, termination=termination), "s")["termination_reason"] == (
        "user_stop"
    )


def test_an_empty_basis_scores_1_and_a_missing_one_is_db_and_communicate(loaded):
    _, world, task, _ = _task(loaded)
    extra = perturb(world, task, "extra_write", REPLY)
    empty = task.model_copy(update={"evaluation": Evaluation(reward_basis=[])})
    assert tau2_reward(world, empty, extra).reward == 1.0  # nothing gates the reward
    unset = task.model_copy(update={"evaluation": Evaluation(communicate_info=["zzz-not-said"])})
    result = tau2_reward(world, unset, gold_conversation(world, unset, REPLY, communicate=[]))
    assert result.basis == ["DB", "COMMUNICATE"] and result.failed == ["COMMUNICATE"]


def test_a_task_without_criteria_scores_1(loaded):
    _, world, task, _ = _task(loaded)
    bare = with_criteria(task, {"id": task.id, "evaluation_criteria": None})
    assert bare.evaluation.reward_basis == []
    assert tau2_reward(world, bare, perturb(world, bare, "extra_write", REPLY)).reward == 1.0


def test_action_is_the_share_of_gold_actions_matched(loaded):
    _, world, task, _ = _task(loaded)
    task = task.model_copy(update={"evaluation": Evaluation(reward_basis=["ACTION"])})
    result = tau2_reward(world, task, perturb(world, task, "missing_write", REPLY))
    n = len(task.gold_actions)
    assert result.reward == pytest.approx((n - 1) / n) and not result.passed


def test_action_compares_json_text_as_json():
    gold = {"order_id": "#W1", "items": '{"a": 1, "b": [2, 3]}'}
    assert action_matches("f", gold, None, "f", {"order_id": "#W1", "items": '{"b":[2,3],"a":1}'})
    assert not action_matches("f", gold, None, "f", {"order_id": "#W1", "items": '{"b":[3,2],"a":1}'})


def test_criteria_the_reward_cannot_reproduce_are_refused(loaded):
    _, world, task, _ = _task(loaded)
    with pytest.raises(Tau2CriteriaError, match=r"env_assertions: not supported"):
        with_criteria(task, {"id": task.id, "evaluation_criteria": {"env_assertions": [{"func_name": "x"}]}})
    with pytest.raises(Tau2CriteriaError, match=r"actions: missing with \['COMMUNICATE', 'DB'\]"):
        with_criteria(task, {"id": task.id, "evaluation_criteria": {"actions": None}})
    staged = task.model_copy(
        update={"initial_state": {"initialization_actions": [{"env_type": "user", "func_name": "x"}]}}
    )
    with pytest.raises(ValueError, match=r"initial_state.initialization_actions: not supported"):
        tau2_reward(world, staged, gold_conversation(world, task, REPLY))


def test_the_replay_runs_writes_after_a_transfer(loaded):
    _, world, task, _ = _task(loaded)
    write = next(a for a in gold_actions(world, task) if world.tools.tools[a.name].kind == "write")
    session = world.session()
    session.transferred = True
    assert execute(session, write.name, write.arguments).error_category == "transferred"
    replay = world.session()
    replay.authorize, replay.transferred = False, True
    assert execute(replay, write.name, write.arguments).ok  # τ²-bench's tools have no such rule
