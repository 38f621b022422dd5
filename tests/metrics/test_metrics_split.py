"""pass^k split by expected outcome in metrics.json: an agent that never acts scores 0 on the 'act' tasks and 1 on
the 'refuse' tasks, whatever its overall pass^k says; a side with no tasks says so."""

from __future__ import annotations

import json

from pipeline.metrics import TrialRecord, summarize


def _records(outcomes: dict[str, tuple[str | None, list[bool | None]]]) -> list[TrialRecord]:
    return [
        TrialRecord(task_id=t, trial=i, template=f"tpl-{t[0]}", expected=expected, passed=passed)
        for t, (expected, trials) in outcomes.items()
        for i, passed in enumerate(trials)
    ]


def test_a_never_acting_agent_scores_zero_on_act_and_one_on_refuse():
    records = _records(
        {
            **{f"a{i}": ("act", [False] * 4) for i in range(6)},
            **{f"r{i}": ("refuse", [True] * 4) for i in range(4)},
        }
    )
    summary = summarize(records, agent="never-acts", max_k=4, resamples=100)
    assert summary.pass_hat_k["4"] == 0.4  # overall: it looks like 40% of the job
    act, refuse = summary.by_expected["act"], summary.by_expected["refuse"]
    assert (act.tasks, act.pass_at_1, act.pass_hat_k) == (6, 0.0, {str(k): 0.0 for k in range(1, 5)})
    assert (refuse.tasks, refuse.pass_at_1, refuse.pass_hat_k) == (4, 1.0, {str(k): 1.0 for k in range(1, 5)})
    assert act.intervals["pass_hat_4"] == [0.0, 0.0] and refuse.intervals["pass_hat_4"] == [1.0, 1.0]
    written = json.loads(json.dumps(summary.model_dump(mode="json")))
    assert written["by_expected"]["act"]["pass_hat_k"]["4"] == 0.0


def test_each_side_has_its_own_bootstrap_interval():
    records = _records(
        {
            **{f"a{i}": ("act", [True, i % 2 == 0, True, i % 3 == 0]) for i in range(12)},
            **{f"r{i}": ("refuse", [i % 2 == 0] * 4) for i in range(8)},
        }
    )
    summary = summarize(records, agent="x", max_k=4, resamples=200)
    for side in ("act", "refuse"):
        split = summary.by_expected[side]
        for k, value in split.pass_hat_k.items():
            low, high = split.intervals[f"pass_hat_{k}"]
            assert low <= value <= high


def test_a_run_without_act_tasks_says_so():
    records = _records({f"r{i}": ("refuse", [True, False]) for i in range(3)})
    summary = summarize(records, agent="x", max_k=2, resamples=50)
    act = summary.by_expected["act"]
    assert (act.tasks, act.pass_at_1, act.pass_hat_k, act.intervals) == (0, None, {}, {})
    assert summary.by_expected["refuse"].tasks == 3
    assert summary.model_dump(mode="json")["by_expected"]["act"] == {
        "tasks": 0,
        "pass_at_1": None,
        "pass_hat_k": {},
        "intervals": {},
    }


def test_records_without_expected_outcomes_keep_the_old_bytes():
    records = _records({f"t{i}": (None, [True, False]) for i in range(3)})
    summary = summarize(records, agent="x", max_k=2, resamples=50)
    assert summary.by_expected == {} and "by_expected" not in summary.model_dump(mode="json")


def test_a_short_task_counts_on_its_side_only_at_the_k_it_reaches():
    records = _records(
        {"a": ("act", [True, True, None]), "b": ("act", [True, False, True]), "r": ("refuse", [True] * 3)}
    )
    summary = summarize(records, agent="x", max_k=3, resamples=50)
    act = summary.by_expected["act"]
    assert act.pass_hat_k["3"] == 0.0  # over b alone: a has 2 valid trials
    assert act.pass_hat_k["2"] == round((1.0 + 1 / 3) / 2, 6)
