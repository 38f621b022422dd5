"""Target splits: budget and floor respected, proportional to rate × weight, read from a real metrics.json."""

from __future__ import annotations

import json
import random

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.grading.failure_modes import FailureAnalysis
from pipeline.grading.modes import LOOP_MODES as FAILURE_MODES  # the modes weighted by default
from pipeline.metrics.summary import TrialRecord, summarize
from pipeline.target import MetricsReadError, TargetConfig, Targets, make_targets, split_budget


def counts(rates, budget, **cfg):
    return {m: t.count for m, t in split_budget(rates, budget, TargetConfig(**cfg)).items()}


def test_hand_computed_split():
    # rest 14 split 0.75 / 0.25 / 0 → 10.5 / 3.5 / 0; the last unit goes to the larger remainder, ties by score
    assert counts({"plan_adherence": 0.3, "invention": 0.1, "misread": 0.0}, 20) == {
        "plan_adherence": 13,
        "invention": 5,
        "misread": 2,
    }


@pytest.mark.parametrize("seed", range(30))
def test_sums_to_budget_and_respects_floor(seed):
    rng = random.Random(seed)
    budget = rng.randrange(0, 200)
    floor = rng.randrange(0, 10)
    rates = {m: rng.choice([0.0, rng.random()]) for m in FAILURE_MODES}
    got = counts(rates, budget, floor=floor)
    assert sum(got.values()) == budget
    assert all(n >= min(floor, budget // len(FAILURE_MODES)) for n in got.values())
    by_rate = sorted(FAILURE_MODES, key=lambda m: rates[m])
    for low, high in zip(by_rate, by_rate[1:], strict=False):
        assert got[high] >= got[low] - 1  # proportional, up to rounding


def test_weights_scale_and_zero_weight_excludes():
    rates = {m: 0.2 for m in FAILURE_MODES}
    got = counts(rates, 30, floor=0, weights={"plan_adherence": 2.0, "invention": 1.0, "misread": 0.0})
    assert got == {"plan_adherence": 20, "invention": 10}


def test_no_failures_measured_splits_evenly_and_budget_below_floors():
    assert counts({}, 9) == {m: 3 for m in FAILURE_MODES}
    assert sum(counts({"misread": 0.5}, 4, floor=5).values()) == 4
    assert counts({"misread": 0.5}, 4, floor=5)["misread"] == 2  # floor shrinks to 1 each, the rest to misread


def test_dials_scale_with_pass_rate_and_reasons():
    modes = split_budget({"invention": 0.2}, 10, TargetConfig(), pass_at_1=0.9)
    assert modes["invention"].dials["forgot_email"] == pytest.approx(min(1.0, 0.6 * 1.4))
    assert any("floor" in r for r in modes["invention"].reasons)
    flat = split_budget({"invention": 0.2}, 10, TargetConfig(scale_by_pass_rate=False), pass_at_1=0.9)
    assert flat["invention"].dials["forgot_email"] == 0.6


def _metrics(tmp_path):
    records = []
    for i, modes in enumerate([["invention"], ["invention", "misread"], [], ["plan_adherence"]]):
        analysis = FailureAnalysis(modes=modes, dominant=modes[0]) if modes else None
        records.append(TrialRecord(task_id=f"t{i}", trial=0, passed=not modes, analysis=analysis))
    summary = summarize(records, agent="flawed", max_k=1, resamples=10)
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps(summary.model_dump(mode="json")))
    return path


def test_reads_a_measure_summary_and_the_cli_writes_targets(tmp_path):
    path = _metrics(tmp_path)
    targets = make_targets(path, 12)
    assert targets.agent == "flawed" and targets.pass_at_1 == 0.25
    assert targets.modes["invention"].rate == 0.5 and targets.modes["invention"].count > targets.modes["misread"].count
    out = tmp_path / "targets.json"
    result = CliRunner().invoke(app, ["target", "--metrics", str(path), "--budget", "12", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert Targets.read(out) == targets


def test_bad_metrics_file(tmp_path):
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps({"pass_at_1": 0.5}))
    with pytest.raises(MetricsReadError, match="failure_modes"):
        make_targets(bad, 10)
    result = CliRunner().invoke(app, ["target", "--metrics", str(bad), "--budget", "5", "--out", str(tmp_path / "t")])
    assert result.exit_code == 2 and "failure_modes" in result.output
