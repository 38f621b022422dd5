"""The iteration run as a person compares it: a name that tells iterations apart, the headline under the same keys
in every iteration, the headline sentence as its description; and the earlier iterations read back for the
report's history."""

from __future__ import annotations

import time
from pathlib import Path

from pipeline.metrics.headline import example
from pipeline.tracking import IterationTracker, TrackingConfig
from pipeline.tracking.headline import HEADLINE_TAG, earlier_iterations, headline_metrics


def _log(config: TrackingConfig, iteration: int, **update) -> str:
    h = example().model_copy(update={"iteration": iteration, **update})
    with IterationTracker(config, iteration=iteration, agent="hf:models/candidate/checkpoint", commit="c0ffee") as it:
        with it.stage("measure", role="baseline", times=(1.0, 31.0)):
            pass
        it.log_headline(h)
    return it.run_id


def test_iterations_differ_at_a_glance_and_share_their_keys(tracking):
    one = _log(tracking, 1, baseline="embedded", candidate_version="1")
    two = _log(tracking, 2, baseline="v1", outcome="block", champion_moved=False, candidate_version="2")
    client = tracking.client()
    r1, r2 = client.get_run(one), client.get_run(two)
    assert (r1.info.run_name, r2.info.run_name) == ("iter-001 · embedded · promoted v1", "iter-002 · v1 · blocked")
    keys = sorted(r1.data.metrics)
    assert keys == sorted(r2.data.metrics)
    assert keys[:2] == ["candidate/pass_at_1", "candidate/pass_hat_4"]
    assert keys[-1] == "stage_seconds/measure"  # stage timings sort after every headline number
    assert {"champion/pass_hat_4", "gain/pass_hat_4", "gain/low", "gain/high", "gain/mde"} <= set(keys)
    assert r2.data.metrics["gate/promote"] == 0.0 and r1.data.metrics["gate/promote"] == 1.0
    note = r2.data.tags["mlflow.note.content"]
    assert note.startswith("**pass^4 31.5% → 55.0% (+23.5 pp, 95% interval +6.1 … +44.1 pp")
    assert "blocked" in note.splitlines()[0]
    assert "| pass^4 | 31.5% | 55.0% | +23.5 pp |" in note
    assert r2.data.tags["agentloop.outcome"] == "block" and r2.data.tags["agentloop.baseline"] == "v1"
    assert headline_metrics(example()) == {k: v for k, v in r1.data.metrics.items() if "stage_seconds" not in k}


def test_a_rerun_of_an_iteration_renames_its_run(tracking):
    first = _log(tracking, 1, outcome="inconclusive", champion_moved=False)
    again = _log(tracking, 1)
    assert first == again
    assert tracking.client().get_run(again).info.run_name == "iter-001 · v1 · promoted v2"


def test_earlier_iterations_are_read_back_one_per_iteration(tracking):
    _log(tracking, 1, outcome="block", champion_moved=False)
    time.sleep(0.05)  # end times are kept in milliseconds
    with IterationTracker(tracking, iteration=1, agent="x", params={"changed": 1}, commit="c") as it:
        it.log_headline(example().model_copy(update={"iteration": 1, "baseline": "embedded"}))  # ended last
    _log(tracking, 2)
    _log(tracking, 3)
    with IterationTracker(tracking, iteration=0, agent="no headline", commit="c"):
        pass
    got = earlier_iterations(tracking, before=3)
    assert [(h.iteration, h.baseline) for h in got] == [(1, "embedded"), (2, "v1")]
    run = tracking.client().search_runs([tracking.experiment_id()], filter_string="tags.`agentloop.iteration` = '3'")[0]
    assert run.data.tags[HEADLINE_TAG] == example().model_copy(update={"iteration": 3}).model_dump_json()


def test_reading_a_store_that_is_not_there_creates_nothing(tmp_path):
    db = tmp_path / "none" / "mlruns.db"
    assert earlier_iterations(TrackingConfig(tracking_uri=f"sqlite:///{db}"), before=5) == []
    assert not db.exists() and not Path(tmp_path / "none").exists()
