"""The decisive call: unit cases for each kind, and agreement with the flaws the FlawedAgent planted."""

from __future__ import annotations

from collections import Counter

from pipeline.agents.registry import make_agent
from pipeline.dataset.io import read_tasks
from pipeline.report.flips import align_messages, decisive_call, find_flips
from pipeline.report.inputs import load_run
from pipeline.rollout.trajectory import Message, ToolCall, Trajectory
from tests.report.conftest import FLAWED

FIND = ("find_user_id_by_email", {"email": "a@b.c"})
ORDER = ("get_order_details", {"order_id": "#W1"})
CANCEL = ("cancel_pending_order", {"order_id": "#W1", "reason": "no longer needed"})


def _traj(*steps, trial: int = 0) -> Trajectory:
    """steps: ('say', text) for an assistant text turn, ('user', text), or (tool, args) for a call + its result."""
    msgs = [Message(role="user", content="hi")]
    for i, (name, arg) in enumerate(steps):
        if name in ("say", "user"):
            msgs.append(Message(role="assistant" if name == "say" else "user", content=arg))
        else:
            msgs.append(Message(role="assistant", tool_calls=[ToolCall(id=f"c{i}", name=name, arguments=arg)]))
            msgs.append(Message(role="tool", tool_call_id=f"c{i}", name=name, content="ok"))
    return Trajectory(task_id="t", trial=trial, agent="a", user="u", world="w", messages=msgs)


def test_changed_arguments_names_the_argument():
    d = decisive_call(
        _traj(FIND, ORDER, ("cancel_pending_order", {"order_id": "#W9", "reason": "no longer needed"})),
        _traj(FIND, ORDER, CANCEL),
    )
    assert d.kind == "changed_arguments"
    assert d.failing.call.arguments["order_id"] == "#W9" and d.passing.call.name == "cancel_pending_order"
    assert d.arg_diffs == [("order_id", "#W9", "#W1")]


def test_missing_and_extra_writes_win_over_earlier_read_differences():
    # the failing trial also read a different order first, but the write it never made is what decided
    d = decisive_call(_traj(FIND, ("get_order_details", {"order_id": "#W2"})), _traj(FIND, ORDER, CANCEL))
    assert d.kind == "missing_in_failing" and d.failing is None and d.passing.call.name == "cancel_pending_order"
    d = decisive_call(_traj(CANCEL, FIND, ORDER, CANCEL), _traj(FIND, ORDER, CANCEL))
    assert d.kind == "extra_in_failing" and d.passing is None and d.failing.message == 1


def test_changed_tool_and_read_only_difference():
    d = decisive_call(
        _traj(FIND, ORDER, ("return_delivered_order_items", {"order_id": "#W1"})), _traj(FIND, ORDER, CANCEL)
    )
    assert d.kind == "changed_tool" and d.failing.call.name == "return_delivered_order_items"
    d = decisive_call(_traj(FIND, ("get_order_details", {"order_id": "#W2"})), _traj(FIND, ORDER))
    assert d.kind == "changed_arguments" and d.arg_diffs == [("order_id", "#W2", "#W1")]


def test_same_calls_after_a_different_conversation_and_identical_trials():
    d = decisive_call(_traj(FIND, CANCEL), _traj(FIND, ("say", "Shall I cancel?"), ("user", "yes"), CANCEL))
    assert d.kind == "context" and d.failing.call.name == d.passing.call.name == "cancel_pending_order"
    assert decisive_call(_traj(FIND, CANCEL), _traj(FIND, CANCEL)) is None


def test_alignment_pairs_equal_turns_and_pads_the_rest():
    a, b = _traj(FIND, CANCEL), _traj(FIND, ("say", "Shall I?"), ("user", "yes"), CANCEL)
    rows = align_messages(a, b)
    assert [(i, j) for i, j, same in rows if same] == [(0, 0), (1, 1), (2, 2), (3, 5), (4, 6)]
    assert {j for _, j, same in rows if not same} == {3, 4}
    assert all(i is None for i, _, same in rows if not same)


PLANTED_KIND = {
    "fabricate": "changed_arguments",
    "no_write": "missing_in_failing",
    "refuse": "missing_in_failing",
    "write_before_auth": "extra_in_failing",
    "wrong_write": "changed_tool",
    "skip_confirmation": "context",
}


def test_decisive_call_matches_the_planted_flaw(runs):
    """Every failed flawed trial against the oracle's passing trial of the same seed: the kind follows the flaw."""
    base, cand = load_run(runs.baseline), load_run(runs.candidate)
    tasks = {t.id: t for t in read_tasks(runs.tasks)}
    agent = make_agent(FLAWED)
    seen: Counter = Counter()
    for key, verdict in base.verdicts.items():
        if verdict.passed or not cand.outcome(key):
            continue
        planted = [v for _, v in agent.planted_variants(tasks[key[0]], key[1]).values()]
        d = decisive_call(base.trajectories[key], cand.trajectories[key])
        if len(planted) == 1:
            assert d is not None and d.kind == PLANTED_KIND[planted[0]], (key, planted, d)
            if d.kind == "changed_arguments":
                assert d.arg_diffs
            seen[d.kind] += 1
    assert len(seen) >= 3, seen  # the fixture covers several kinds of flaw


def test_find_flips_both_directions(runs):
    base, cand = load_run(runs.baseline), load_run(runs.candidate)
    up = find_flips(base, cand)
    assert up and all(f.direction == "fixed" and f.baseline[0] == 0 and f.candidate[0] > 0 for f in up)
    assert all(f.failing_side == "baseline" and f.before is f.failing for f in up)
    down = find_flips(cand, base)
    assert [f.task_id for f in down] == [f.task_id for f in up]
    assert all(f.direction == "regressed" and f.after is f.failing for f in down)
    assert find_flips(cand, cand) == []
