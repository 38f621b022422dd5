"""The τ²-compatible reward: τ²-bench's rule on gold and perturbed conversations of real retail and airline tasks."""

from __future__ import annotations

import json

import pytest

from pipeline.dataset.task import Action, Evaluation
from pipeline.errors import InputError, TaskError
from pipeline.grading.grader import grade
from pipeline.grading.tau2_criteria import apply_criteria
from pipeline.grading.tau2_reward import Tau2Config, action_matches, communicated, tau2_reward
from pipeline.grading.verdict import ComponentResult
from pipeline.rollout.trajectory import Message, Trajectory
from pipeline.tau2.gold import PERTURBATIONS, gold_actions, gold_conversation, perturb
from pipeline.world.registry import resolve_domain

REPLY = ("Sounds good, please do that.",)


@pytest.fixture(scope="module")
def airline(tau2_airline_dir):
    world, tasks = resolve_domain("airline").require("tau2_importer").load(tau2_airline_dir)
    raw = json.loads((tau2_airline_dir / "tasks.json").read_text())
    return world, {t.id: t for t in apply_criteria(tasks, raw)}


class FakeJudge:
    """Answers every NL assertion with a fixed verdict and remembers what it was asked."""

    enabled = True

    def __init__(self, passed: bool) -> None:
        self.passed, self.asked = passed, []

    def judge(self, task, trajectory):
        self.asked.append(list(task.rubric))
        return ComponentResult(name="judge", passed=self.passed, details=[] if self.passed else ["not met"])


def test_every_retail_gold_conversation_scores_1(domain):
    failed = [
        t.id for t in domain.tasks if not tau2_reward(domain.world, t, gold_conversation(domain.world, t, REPLY)).passed
    ]
    assert failed == [] and len(domain.tasks) == 114


def test_every_airline_gold_conversation_scores_1(airline):
    world, tasks = airline
    failed = [t.id for t in tasks.values() if not tau2_reward(world, t, gold_conversation(world, t, REPLY)).passed]
    assert failed == [] and len(tasks) == 50


@pytest.mark.parametrize("how", ["missing_write", "wrong_argument", "extra_write"])
def test_a_changed_end_state_scores_0_on_db(domain, how):
    task = domain.task("69")
    result = tau2_reward(domain.world, task, perturb(domain.world, task, how, REPLY))
    assert result.reward == 0.0 and result.failed == ["DB"]
    assert "end state differs from gold" in result.checks[0].details[0]


def test_max_steps_scores_0_unevaluated_while_strict_passes(domain):
    task = domain.task("69")
    verdict = grade(domain.world, task, perturb(domain.world, task, "max_steps", REPLY))
    assert verdict.passed and verdict.tau2.reward == 0.0 and verdict.tau2.terminated_early
    assert verdict.tau2.failed == ["termination"] and not verdict.tau2.checks


def test_information_not_communicated_fails_only_where_communicate_is_in_the_basis(domain, airline):
    world, tasks = airline
    air = tasks["3"]
    assert air.evaluation.reward_basis == ["DB", "COMMUNICATE"] and air.evaluation.communicate_info
    result = tau2_reward(world, air, perturb(world, air, "info_not_communicated", REPLY))
    assert result.failed == ["COMMUNICATE"] and result.reward == 0.0
    retail = next(t for t in domain.tasks if t.evaluation.communicate_info)
    assert "COMMUNICATE" not in retail.evaluation.reward_basis  # retail's basis is DB and NL_ASSERTION
    assert tau2_reward(domain.world, retail, perturb(domain.world, retail, "info_not_communicated", REPLY)).passed


def test_communicate_is_a_lowercase_substring_with_the_messages_commas_removed():
    def traj(*texts: str) -> Trajectory:
        msgs = [Message(role="assistant", content=t) for t in texts]
        return Trajectory(task_id="x", agent="a", user="u", world="w", messages=msgs)

    assert communicated("1,234.50", traj("Your refund is 1,234.50 dollars")) is False  # the needle keeps its comma
    assert communicated("1234.50", traj("Your refund is $1,234.50")) is True
    assert communicated("Gift Card", traj("refunded to your GIFT CARD")) is True
    assert communicated("gift card", traj("   ")) is False
    user_said = Trajectory(
        task_id="x", agent="a", user="u", world="w", messages=[Message(role="user", content="gift card")]
    )
    assert communicated("gift card", user_said) is False


def test_action_match_compares_the_named_arguments_or_all_of_the_calls():
    gold = {"order_id": "#W1", "reason": "no longer needed"}
    assert action_matches("cancel", gold, None, "cancel", {"order_id": "#W1", "reason": "no longer needed"})
    assert not action_matches("cancel", gold, None, "cancel", {"order_id": "#W1", "reason": "ordered by mistake"})
    assert action_matches("cancel", gold, ["order_id"], "cancel", {"order_id": "#W1", "reason": "ordered by mistake"})
    assert action_matches("cancel", gold, None, "cancel", {"order_id": "#W1"})  # only the call's keys are compared
    assert not action_matches("cancel", gold, None, "return", gold)


def test_action_in_the_basis_needs_every_gold_call(domain):
    task = domain.task("69")
    task = task.model_copy(update={"evaluation": Evaluation(reward_basis=["ACTION"])})
    assert tau2_reward(domain.world, task, gold_conversation(domain.world, task, REPLY)).passed
    missing = tau2_reward(domain.world, task, perturb(domain.world, task, "missing_write", REPLY))
    assert missing.failed == ["ACTION"] and "no call matches gold" in missing.checks[2].details[0]


def test_nl_assertions_go_to_the_judge_and_without_one_are_left_out(domain):
    task = next(t for t in domain.tasks if t.evaluation.nl_assertions)
    traj = gold_conversation(domain.world, task, REPLY)
    alone = tau2_reward(domain.world, task, traj)
    assert alone.passed and alone.unjudged == ["NL_ASSERTION"] and "no judge" in alone.notes[0]
    no = FakeJudge(False)
    judged = tau2_reward(domain.world, task, traj, judge=no)
    assert judged.failed == ["NL_ASSERTION"] and no.asked == [task.evaluation.nl_assertions]
    assert tau2_reward(domain.world, task, traj, judge=FakeJudge(True)).passed


def test_a_write_our_tools_refused_but_tau2s_would_run_scores_0(domain):
    task = domain.task("69")
    no_auth = [
        a
        for a in gold_actions(domain.world, task)
        if a.name not in ("find_user_id_by_email", "find_user_id_by_name_zip")
    ]
    verdict = grade(domain.world, task, gold_conversation(domain.world, task, REPLY, actions=no_auth))
    assert not verdict.passed and "state" in verdict.failed_components  # our tools refused the writes
    # τ²-bench's tools would have run them: its strict replay cannot reproduce the refusals the conversation shows
    assert verdict.tau2.reward == 0.0 and verdict.tau2.failed == ["replay"] and verdict.tau2.replay_diverged
    assert "the conversation's tool refused it" in verdict.tau2.notes[0]
    traj = gold_conversation(domain.world, task, REPLY, actions=no_auth)
    assert tau2_reward(domain.world, task, traj, Tau2Config(check_record=False)).passed  # replayed as τ²'s tools run


def test_upstream_modify_items_makes_the_pair_order_matter(domain):
    task = domain.task("100")
    actions = gold_actions(domain.world, task)
    i = next(k for k, a in enumerate(actions) if a.name == "modify_pending_order_items")
    args = {**actions[i].arguments}
    args["item_ids"], args["new_item_ids"] = args["item_ids"][::-1], args["new_item_ids"][::-1]
    swapped = [*actions[:i], actions[i].model_copy(update={"arguments": args}), *actions[i + 1 :]]
    traj = gold_conversation(domain.world, task, REPLY, actions=swapped)
    assert tau2_reward(domain.world, task, traj).passed
    upstream = Tau2Config(upstream_tools=True)
    assert tau2_reward(domain.world, task, gold_conversation(domain.world, task, REPLY), upstream).passed
    assert tau2_reward(domain.world, task, traj, upstream).failed == ["DB"]


def test_a_failed_gold_write_certifies_no_match(domain):
    task = domain.task("105")  # its exchange is refused: the gift card cannot cover the difference
    result = tau2_reward(domain.world, task, perturb(domain.world, task, "missing_write", REPLY))
    assert result.passed and "match not certified" in result.checks[0].details[-1]
    extra = tau2_reward(domain.world, task, perturb(domain.world, task, "extra_write", REPLY))
    assert extra.failed == ["DB"]  # a mismatch still scores 0


def test_unknown_reward_type_is_named(domain):
    task = domain.task("69").model_copy(update={"evaluation": Evaluation(reward_basis=["DB", "VIBES"])})
    with pytest.raises(TaskError, match=r"reward_basis: unknown reward type\(s\) \['VIBES'\]"):
        tau2_reward(domain.world, task, gold_conversation(domain.world, task, REPLY))


def test_a_task_without_criteria_is_scored_on_db_and_communicate(domain):
    task = domain.task("69").model_copy(update={"evaluation": None})
    result = tau2_reward(domain.world, task, gold_conversation(domain.world, task, REPLY))
    assert result.basis == ["DB", "COMMUNICATE"] and result.passed


@pytest.mark.parametrize("how", PERTURBATIONS)
def test_every_verdict_carries_both_results(domain, how):
    task = domain.task("3")
    verdict = grade(domain.world, task, perturb(domain.world, task, how, REPLY))
    assert verdict.tau2 is not None and verdict.outcome("tau2") == verdict.tau2.passed
    with pytest.raises(InputError, match="unknown verdict"):
        verdict.outcome("lenient")


def test_extra_write_has_an_airline_form(airline):
    world, tasks = airline
    task = tasks["11"]
    traj = perturb(world, task, "extra_write", REPLY)
    assert traj.tool_calls()[-1].name == "send_certificate"
    assert tau2_reward(world, task, traj).failed == ["DB"]


def test_criteria_must_fit_the_tasks_actions(domain):
    from pipeline.grading.tau2_criteria import Tau2CriteriaError, with_criteria

    task = domain.task("69")
    with pytest.raises(Tau2CriteriaError, match="task 69: evaluation_criteria.actions: 0 actions"):
        with_criteria(task, {"id": "69", "evaluation_criteria": {"actions": []}})
    wrong = [{"name": "nope"} for _ in task.gold_actions]
    with pytest.raises(Tau2CriteriaError, match=r"actions\[0\]: not the task's"):
        with_criteria(task, {"id": "69", "evaluation_criteria": {"actions": wrong}})
    assert isinstance(task.gold_actions[0], Action)
