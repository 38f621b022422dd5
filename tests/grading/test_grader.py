"""The verdict end to end: gold passes, diffs are named, tampering and infra errors are caught."""

from __future__ import annotations

import pytest

from pipeline.errors import TaskError
from pipeline.grading import ComponentResult, Verdict, grade, verdict_summary
from pipeline.grading.grader import CACHE_SIZE, clear_expected_cache, expected_state
from pipeline.grading.judge import NoJudge
from pipeline.rollout.protocols import EpisodeInfo, InfrastructureError, UserReply
from pipeline.rollout.runner import run_episode
from pipeline.rollout.trajectory import Message, ToolCall
from tests.grading.grading_helpers import Call, confirmed, record

EMMA = "emma_smith_8564"
LOOKUP = Call("find_user_id_by_name_zip", {"first_name": "Emma", "last_name": "Smith", "zip": "10192"})
CANCEL = Call("cancel_pending_order", {"order_id": "#W2417020", "reason": "no longer needed"})
ASK, YES = ("agent", "Shall I go ahead?"), ("user", "yes")
GOLD = [("user", "hi"), LOOKUP, Call("get_user_details", {"user_id": EMMA}), ASK, YES, CANCEL, ("agent", "Done.")]


@pytest.fixture
def task69(tau2_tasks):
    return tau2_tasks["69"]


def test_gold_equivalent_trajectory_passes(tau2_world, task69):
    verdict = grade(tau2_world, task69, record(tau2_world, "69", GOLD, trial=3))
    assert verdict.passed, verdict_summary(verdict)
    assert verdict.trial == 3 and verdict.diffs == [] and not verdict.infra_error
    assert verdict.final_hash == verdict.expected_hash != ""
    names = [c.name for c in verdict.components]
    assert names[0] == "state" and "replay_consistency" in names and "judge" not in names
    assert {n for n in names if n.startswith("static.")} == {
        "static.status_transitions", "static.refund_ceiling", "static.gift_card_balance", "static.tool_budget",
        "static.authorization", "static.policy_violation", "static.after_transfer", "static.confirmation",
    }  # fmt: skip
    assert verdict_summary(verdict) == "PASS task 69 trial 3"


def test_wrong_value_is_named(tau2_world, task69):
    wrong = Call("cancel_pending_order", {"order_id": "#W2417020", "reason": "ordered by mistake"})
    verdict = grade(tau2_world, task69, record(tau2_world, "69", [("user", "hi"), LOOKUP, ASK, YES, wrong]))
    assert verdict.failed_components == ["state"]
    assert [(d.kind, d.table, d.key, d.path, d.expected, d.actual) for d in verdict.diffs] == [
        ("wrong_value", "orders", "#W2417020", "cancel_reason", "no longer needed", "ordered by mistake")
    ]
    assert verdict_summary(verdict) == "FAIL task 69 trial 0: state (1 wrong_value)"


def test_unrequested_change_is_named(tau2_world, task69):
    extra = Call("cancel_pending_order", {"order_id": "#W3614011", "reason": "no longer needed"})
    steps = [("user", "hi"), LOOKUP, ASK, YES, CANCEL, ASK, YES, extra]
    diffs = {(d.table, d.key, d.path): d for d in grade(tau2_world, task69, record(tau2_world, "69", steps)).diffs}
    assert diffs[("orders", "#W3614011", "status")].kind == "unrequested_change"
    assert diffs[("orders", "#W3614011", "payment_history.1")].kind == "unrequested_change"
    balance = diffs[("users", EMMA, "payment_methods.gift_card_8541487.balance")]
    assert balance.kind == "wrong_value"  # both credited the gift card, by different amounts
    assert (balance.base, balance.expected, balance.actual) == (62.0, 2736.4, 4008.34)


def test_missing_change_is_named(tau2_world, task69):
    verdict = grade(tau2_world, task69, record(tau2_world, "69", [("user", "hi"), LOOKUP, ("agent", "Bye.")]))
    assert verdict.failed_components == ["state"]
    assert {(d.kind, d.table, d.path) for d in verdict.diffs} == {
        ("missing_change", "orders", "status"),
        ("missing_change", "orders", "cancel_reason"),
        ("missing_change", "orders", "payment_history.1"),
        ("missing_change", "users", "payment_methods.gift_card_8541487.balance"),
    }
    assert verdict.component("state").details[0] == "4 differing fields (4 missing_change)"


def test_tau2_write_only_gold_needs_the_preauthenticated_customer(tau2_world, tau2_tasks):
    task = tau2_tasks["88"]  # gold is a single cancel: τ² gold trajectories carry no authentication step
    steps = confirmed(task.gold_actions)
    assert grade(tau2_world, task, record(tau2_world, "88", steps, task.customer_user_id),
                 authenticated_user_id=task.customer_user_id).passed  # fmt: skip
    verdict = grade(tau2_world, task, record(tau2_world, "88", steps))
    assert set(verdict.failed_components) == {"state", "static.authorization"}


def test_replay_ignores_unparseable_calls_as_refused(tau2_world, task69):
    bad = [("user", "hi"), LOOKUP, Call("cancel_pending_order", None), ASK, YES, CANCEL]
    verdict = grade(tau2_world, task69, record(tau2_world, "69", bad))
    assert verdict.passed


# ---- tampering -----------------------------------------------------------------------------
def _tamper_tool_message(traj):
    msg = next(m for m in traj.messages if m.role == "tool" and m.name == "cancel_pending_order")
    msg.content = msg.content.replace("cancelled", "delivered")


def _tamper_log(traj):
    traj.world_log[-1]["ok"] = True
    traj.world_log[-1]["error"] = None


def _tamper_state(traj):
    traj.final_changed["orders"]["#W2417020"]["status"] = "pending"


def _tamper_hash(traj):
    traj.final_hash = "0" * 64


@pytest.mark.parametrize("tamper", [_tamper_tool_message, _tamper_log, _tamper_state, _tamper_hash])
def test_tampered_record_fails_replay_consistency(tau2_world, task69, tamper):
    steps = [*GOLD[:-1], Call("get_order_details", {"order_id": "#W0000000"})]  # last event is a refusal
    traj = record(tau2_world, "69", steps)
    assert grade(tau2_world, task69, traj).passed
    tamper(traj)
    verdict = grade(tau2_world, task69, traj)
    assert verdict.failed_components == ["replay_consistency"]
    assert any("tampered" in d for d in verdict.diagnostics)


def test_claimed_final_state_is_not_trusted(tau2_world, task69):
    good = record(tau2_world, "69", GOLD)
    lazy = record(tau2_world, "69", [("user", "hi"), LOOKUP, ("agent", "Done, cancelled.")])
    lazy.final_changed, lazy.final_hash = good.final_changed, good.final_hash
    verdict = grade(tau2_world, task69, lazy)
    assert {"state", "replay_consistency"} <= set(verdict.failed_components)
    assert verdict.final_hash != good.final_hash


def test_trajectory_without_a_recorded_state_is_checked_on_tool_messages(tau2_world, task69):
    traj = record(tau2_world, "69", GOLD)
    traj.world_log, traj.final_changed, traj.final_hash = [], {}, ""
    verdict = grade(tau2_world, task69, traj)
    assert verdict.passed and any("no recorded world log" in d for d in verdict.diagnostics)
    traj.messages = [m for m in traj.messages if m.role != "tool"]
    assert grade(tau2_world, task69, traj).failed_components == ["replay_consistency"]


# ---- infra errors, judge, cache ----------------------------------------------------------
def test_infra_error_is_excluded(tau2_world, task69):
    traj = record(tau2_world, "69", GOLD[:2]).model_copy(update={"termination": "infra_error", "error": "503"})
    verdict = grade(tau2_world, task69, traj)
    assert verdict.infra_error and not verdict.passed and verdict.components == []
    assert verdict_summary(verdict) == "INFRA task 69 trial 0: infrastructure error: 503"


class FailingJudge:
    def judge(self, task, trajectory):
        return ComponentResult(name="whatever", passed=False, details=["the 'yes' was unclear"])


class DownJudge:
    def judge(self, task, trajectory):
        raise InfrastructureError("judge endpoint down")


def test_judge_slot(tau2_world, task69):
    traj = record(tau2_world, "69", GOLD)
    assert grade(tau2_world, task69, traj, judge=NoJudge()).component("judge") is None
    advisory = grade(tau2_world, task69, traj, judge=FailingJudge())
    assert advisory.passed and advisory.component("judge").required is False
    required = grade(tau2_world, task69, traj, judge=FailingJudge(), judge_required=True)
    assert required.failed_components == ["judge"]
    assert grade(tau2_world, task69, traj, judge=DownJudge()).infra_error


def test_expected_state_is_cached_and_bounded(tau2_world, tau2_tasks, monkeypatch):
    clear_expected_cache()
    task = tau2_tasks["69"]
    first = expected_state(tau2_world, task)
    assert expected_state(tau2_world, task) is first
    changed_gold = task.model_copy(update={"gold_actions": task.gold_actions[:1]})
    assert expected_state(tau2_world, changed_gold) is not first  # gold actions are part of the key
    monkeypatch.setattr("pipeline.grading.grader.CACHE_SIZE", 1)
    expected_state(tau2_world, tau2_tasks["88"])
    assert expected_state(tau2_world, task) is not first  # evicted
    assert CACHE_SIZE >= 1000


def test_wrong_task_is_an_error(tau2_world, tau2_tasks):
    with pytest.raises(TaskError, match="not '88'"):
        grade(tau2_world, tau2_tasks["88"], record(tau2_world, "69", GOLD))


# ---- against the runner and all τ² gold trajectories --------------------------------------
class _Script:
    """Scripted agent and user: the agent plays GOLD's calls and lines, the user says 'hi' then 'yes'."""

    name = "script"

    def __init__(self, role):
        self.role = role

    def start(self, info: EpisodeInfo):
        self.steps = iter([s for s in GOLD if not (isinstance(s, tuple) and s[0] == "user")])
        self.said = 0
        return self

    def act(self, messages):
        step = next(self.steps, None)
        if step is None:
            return Message(role="assistant", content="")
        if isinstance(step, Call):
            return Message(role="assistant", tool_calls=[ToolCall(id=f"c{len(messages)}", name=step.name,
                                                                  arguments=step.arguments)])  # fmt: skip
        return Message(role="assistant", content=step[1])

    def respond(self, messages):
        self.said += 1
        return UserReply(content=["hi", "yes"][self.said - 1] if self.said <= 2 else "bye", stop=self.said > 2)


def test_runner_trajectory_is_consistent_with_its_replay(tau2_world, task69):
    traj = run_episode(tau2_world, task69, _Script("agent"), _Script("user"))
    assert traj.world_log and traj.final_hash
    verdict = grade(tau2_world, task69, traj)
    assert verdict.passed, verdict_summary(verdict)
    roundtrip = type(traj).model_validate_json(traj.model_dump_json())
    assert grade(tau2_world, task69, roundtrip).passed


def test_all_tau2_gold_trajectories_pass(tau2_world, tau2_tasks):
    assert len(tau2_tasks) == 114
    for task in tau2_tasks.values():
        auth = task.customer_user_id
        verdict = grade(tau2_world, task, record(tau2_world, task.id, confirmed(task.gold_actions), auth),
                        authenticated_user_id=auth)  # fmt: skip
        assert isinstance(verdict, Verdict) and verdict.passed, verdict_summary(verdict)
