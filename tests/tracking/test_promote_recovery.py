"""The promote stage run again changes nothing that already happened: the same checkpoint is the same registered
version, `champion` does not move twice, and a kill right after the alias moved is recovered by a rerun
(gate/promotion.json from the registry's truth, no stage run left RUNNING)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.loop.params import load_params
from pipeline.loop.track import track_and_promote
from pipeline.tracking import champion_version
from tests.tracking.promote_inputs import promote_inputs, weights

ROOT = Path(__file__).resolve().parents[2]
KILL_AFTER_ALIAS_MOVE = """
import os, signal, sys
from pathlib import Path
import pipeline.tracking as tracking
from pipeline.loop.params import load_params
from pipeline.loop.track import track_and_promote

real = tracking.promote

def promote_then_die(*args, **kwargs):
    real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)

tracking.promote = promote_then_die
track_and_promote(load_params(Path(sys.argv[1])), Path("dvc.lock"))
"""


@pytest.fixture
def loop_dir(tracking, tmp_path, monkeypatch):
    """The inputs the promote stage reads, in a directory of their own (the tracking fixture's cwd stays empty)."""
    repo = promote_inputs(tmp_path / "repo")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking.tracking_uri)
    monkeypatch.delenv("AGENTLOOP_PROMOTE", raising=False)
    monkeypatch.chdir(repo)
    return repo


def registry(tracking):
    client = tracking.client()
    versions = sorted(int(v.version) for v in client.search_model_versions("name = 'agentloop-agent'"))
    experiment = client.get_experiment_by_name("agentloop")
    running = client.search_runs([experiment.experiment_id], filter_string="attributes.status = 'RUNNING'")
    return versions, [r.info.run_name for r in running]


def promotion(repo: Path) -> dict:
    return json.loads((repo / "gate" / "promotion.json").read_text())


@pytest.fixture
def params(loop_dir):
    return load_params(loop_dir / "params.yaml")


def test_a_rerun_registers_nothing_new_and_moves_nothing(loop_dir, tracking, params):
    first = track_and_promote(params)
    record = (loop_dir / "gate" / "promotion.json").read_bytes()
    assert first["model_version"] == "1" and first["champion_moved"] and first["champion_version"] == "1"
    track_and_promote(params)
    track_and_promote(params)
    assert registry(tracking) == ([1], [])
    assert (loop_dir / "gate" / "promotion.json").read_bytes() == record
    mv = tracking.client().get_model_version("agentloop-agent", "1")
    assert mv.tags["agentloop.promoted_over"] == "none"  # the first promotion's record, not overwritten by reruns


def test_a_kill_after_the_alias_moved_is_recovered_by_a_rerun(loop_dir, tracking, params):
    track_and_promote(params)
    weights(loop_dir, "second")  # the next iteration's candidate
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_ALIAS_MOVE, str(loop_dir / "params.yaml")],
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -9, killed.stderr
    assert champion_version(tracking) == "2" and promotion(loop_dir)["model_version"] == "1"  # the torn state
    versions, running = registry(tracking)
    assert versions == [1, 2] and running  # the killed process left its runs RUNNING

    again = track_and_promote(params)
    assert again["model_version"] == "2" and again["champion_version"] == "2" and again["champion_moved"]
    assert promotion(loop_dir)["model_version"] == "2"
    assert registry(tracking) == ([1, 2], [])
    client = tracking.client()
    assert client.get_model_version("agentloop-agent", "2").tags["agentloop.promoted_over"] == "1"
    experiment = client.get_experiment_by_name("agentloop")
    killed_runs = client.search_runs([experiment.experiment_id], filter_string="attributes.status = 'KILLED'")
    assert any("promote" in r.info.run_name for r in killed_runs)
