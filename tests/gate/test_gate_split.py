"""pass^k split by expected outcome in the gate: a gain made of refusals cannot pass unseen, a drop on the 'act'
tasks blocks (the tracked metric 'act pass^k'), and held-out tasks of one kind only are said so, not a crash."""

from __future__ import annotations

import pytest

from pipeline.gate import ACT_PASS_HAT_K, TRACKED, GateConfig, GateInputError, TaskOutcome, evaluate

ACT = [f"act{i}" for i in range(10)]
REFUSE = [f"refuse{i}" for i in range(15)]


def _task(template: str, passes: int, expected, n: int = 4) -> TaskOutcome:
    modes = {"invention": n - passes} if passes < n else {}
    return TaskOutcome(template=template, n=n, passes=passes, modes=modes, expected=expected)


def refusal_gain(n_act: int = 80, n_refuse: int = 120):
    """The candidate refuses every request it should refuse, where the champion refused none, and acts less
    reliably: a quarter of the tasks it should act on now flip."""
    champ, cand = {}, {}
    for i in range(n_act):
        tid, tpl = f"a{i:03d}", ACT[i % len(ACT)]
        champ[tid], cand[tid] = _task(tpl, 4, "act"), _task(tpl, 2 if (i // len(ACT)) % 4 == 0 else 4, "act")
    for i in range(n_refuse):
        tid, tpl = f"r{i:03d}", REFUSE[i % len(REFUSE)]
        champ[tid], cand[tid] = _task(tpl, 0, "refuse"), _task(tpl, 4, "refuse")
    return cand, champ


def test_act_pass_hat_k_is_tracked_by_default():
    assert ACT_PASS_HAT_K in TRACKED and ACT_PASS_HAT_K in GateConfig().tracked


def test_a_gain_made_of_refusals_is_blocked_by_the_act_side_test():
    cand, champ = refusal_gain()
    result = evaluate(cand, champ, GateConfig())
    assert result.pass_hat_k.low > 0  # the overall pass^4 gain alone would promote
    assert result.outcome == "block" and not result.promote
    act_test = next(t for t in result.tests if t.name == ACT_PASS_HAT_K)
    assert act_test.worse and act_test.better == "higher"
    assert (act_test.champion, act_test.candidate) == (1.0, 0.75)
    assert any(r.startswith("act pass^k got significantly worse: 1.000 → 0.750") for r in result.reasons)
    assert not next(t for t in result.tests if t.name == "pass@1").worse  # pass@1 rose: it hides the drop
    act, refuse = result.by_expected["act"], result.by_expected["refuse"]
    assert (act.tasks, act.champion, act.candidate) == (80, 1.0, 0.75)
    assert (refuse.tasks, refuse.champion, refuse.candidate) == (120, 0.0, 1.0)
    assert act.high < 0 < refuse.low
    assert any(r.startswith("act tasks (80; the gold changes the world): pass^4 1.000 → 0.750") for r in result.reasons)
    assert any(r.startswith("refuse tasks (120; the gold changes nothing)") for r in result.reasons)


def test_without_the_act_side_test_the_same_runs_would_promote():
    cand, champ = refusal_gain()
    tracked = [m for m in TRACKED if m != ACT_PASS_HAT_K]
    result = evaluate(cand, champ, GateConfig(tracked=tracked))
    assert result.outcome == "promote"  # what the act-side test is there to stop
    assert result.by_expected["act"].high < 0  # still shown


def test_held_out_tasks_without_act_tasks_say_so():
    champ = {f"r{i:03d}": _task(REFUSE[i % 6], 2, "refuse") for i in range(30)}
    cand = {f"r{i:03d}": _task(REFUSE[i % 6], 4, "refuse") for i in range(30)}
    result = evaluate(cand, champ, GateConfig())
    assert ACT_PASS_HAT_K not in {t.name for t in result.tests}
    assert "act pass^k not tested: no held-out task's gold changes the world (no act tasks)" in result.reasons
    assert "act tasks: none among the held-out tasks (no task whose gold changes the world)" in result.reasons
    act = result.by_expected["act"]
    assert act.tasks == 0 and act.candidate is None and act.diff is None
    assert result.by_expected["refuse"].tasks == 30
    assert result.outcome == "promote"


def test_held_out_tasks_without_refuse_tasks_say_so():
    cand = {f"a{i:03d}": _task(ACT[i % 4], 4, "act") for i in range(20)}
    result = evaluate(cand, None, GateConfig())
    assert "refuse tasks: none among the held-out tasks (no task whose gold changes nothing)" in result.reasons
    act = result.by_expected["act"]
    assert act.champion is None and act.candidate == act.diff == 1.0  # first iteration: its own pass^k
    assert any(r.startswith("act tasks (20; the gold changes the world): pass^4 1.000 (") for r in result.reasons)


def test_tables_without_expected_outcomes_leave_the_split_out():
    plain = {f"t{i}": TaskOutcome(template=f"tpl{i % 6}", n=4, passes=i % 5) for i in range(30)}
    result = evaluate(plain, plain, GateConfig())
    assert result.by_expected == {}
    assert "act pass^k not tested: the held-out tasks' expected outcomes (act / refuse) are not known" in result.reasons
    assert ACT_PASS_HAT_K not in {t.name for t in result.tests}


def test_an_unknown_expected_outcome_is_refused():
    with pytest.raises(GateInputError, match="expected='write'"):
        TaskOutcome(template=None, n=4, passes=1, expected="write")  # type: ignore[arg-type]


def test_the_act_side_is_the_candidate_s_act_tasks_on_both_sides():
    cand, champ = refusal_gain()
    plain = {t: TaskOutcome(o.template, o.n, o.passes, o.modes) for t, o in champ.items()}  # no expected outcome
    a, b = evaluate(cand, champ, GateConfig()), evaluate(cand, plain, GateConfig())
    assert [t for t in a.tests if t.name == ACT_PASS_HAT_K] == [t for t in b.tests if t.name == ACT_PASS_HAT_K]
    assert a.by_expected == b.by_expected
