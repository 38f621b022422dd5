"""`agentloop measure` end to end with scripted participants."""

import json

import pytest
from typer.testing import CliRunner

from pipeline.agents.registry import UnknownAgentError, make_agent
from pipeline.authoring.templates import generate_tasks
from pipeline.cli import app
from pipeline.dataset.io import write_tasks
from pipeline.measure import MeasureConfig, measure
from pipeline.metrics.errors import MetricsInputError
from pipeline.world.registry import load_world

WORLD = "gen-11-12x40x80"


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("measure") / "tasks.jsonl"
    write_tasks(path, generate_tasks(load_world(WORLD), 24, seed=4))
    return path


def test_oracle_is_perfect(tasks_file, tmp_path):
    summary = measure(MeasureConfig(world=WORLD, tasks=tasks_file, agent="oracle", trials=2, resamples=200), tmp_path)
    assert summary.pass_hat_k == {"1": 1.0, "2": 1.0}
    assert summary.buckets["always"] == 1.0
    assert all(rate.trials == 0 for rate in summary.failure_modes.values())
    files = {p.name for p in tmp_path.iterdir()}
    assert {"trajectories.jsonl", "verdicts.jsonl", "per_task.csv", "metrics.json"} <= files
    assert len((tmp_path / "trajectories.jsonl").read_text().splitlines()) == 48


def test_flawed_metrics_are_byte_identical_and_show_modes(tasks_file, tmp_path):
    cfg = MeasureConfig(
        world=WORLD,
        tasks=tasks_file,
        agent="flawed:plan_adherence=0.4,invention=0.4,misread=0.4",
        trials=3,
        seed=7,
        resamples=200,
    )
    a = measure(cfg, tmp_path / "a")
    measure(cfg, tmp_path / "b")
    assert (tmp_path / "a" / "metrics.json").read_bytes() == (tmp_path / "b" / "metrics.json").read_bytes()
    assert a.pass_hat_k["3"] <= a.pass_hat_k["1"] < 1.0
    assert a.pass_at_k["3"] >= a.pass_at_k["1"]
    assert sum(rate.trials for rate in a.failure_modes.values()) > 0
    lo, hi = a.intervals["pass_hat_1"]
    assert lo <= a.pass_hat_k["1"] <= hi
    assert abs(sum(a.buckets.values()) - 1) < 1e-5
    metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert set(metrics["diff_categories"]) == {"wrong_value", "unrequested_change", "missing_change"}


def test_bad_inputs(tmp_path, tasks_file):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(MetricsInputError, match="empty task set"):
        measure(MeasureConfig(world=WORLD, tasks=empty, agent="oracle"), tmp_path / "o")
    with pytest.raises(MetricsInputError, match="k=5 exceeds trials=4"):
        measure(MeasureConfig(world=WORLD, tasks=tasks_file, agent="oracle", trials=4, k=5), tmp_path / "o")
    with pytest.raises(UnknownAgentError, match="unknown agent 'gpt-9'"):
        make_agent("gpt-9")
    with pytest.raises(UnknownAgentError, match="must be a number"):
        make_agent("flawed:invention=lots")


def test_cli_measure(tasks_file, tmp_path):
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "measure",
            "--world",
            WORLD,
            "--tasks",
            str(tasks_file),
            "--agent",
            "oracle",
            "--trials",
            "2",
            "--max-tasks",
            "5",
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "pass^2" in result.output
    result = runner.invoke(
        app,
        ["measure", "--world", WORLD, "--tasks", str(tasks_file), "--agent", "nope", "--out", str(tmp_path / "run2")],
    )
    assert result.exit_code == 2
    assert "unknown agent 'nope'" in result.output


def test_a_never_acting_agent_shows_in_the_split_by_expected_outcome(tasks_file, tmp_path):
    """Every refusal passed, every request that needs a write failed: overall pass^k hides it, the split does not."""
    never = MeasureConfig(world=WORLD, tasks=tasks_file, agent="flawed:inaction=1.0,seed=1", trials=2, resamples=100)
    summary = measure(never, tmp_path)
    act, refuse = summary.by_expected["act"], summary.by_expected["refuse"]
    assert act.tasks > 0 and refuse.tasks > 0 and act.tasks + refuse.tasks == summary.tasks
    assert act.pass_hat_k == {"1": 0.0, "2": 0.0} and refuse.pass_hat_k == {"1": 1.0, "2": 1.0}
    assert 0.0 < summary.pass_hat_k["2"] < 1.0
    written = json.loads((tmp_path / "metrics.json").read_text())["by_expected"]
    assert (written["act"]["pass_hat_k"]["2"], written["refuse"]["pass_hat_k"]["2"]) == (0.0, 1.0)
