"""Two retrain runs racing on the team's registry (the stack's MLflow server on PostgreSQL, the alias lock a
PostgreSQL advisory lock): each runs the real promote stage in its own checkout, planned against the same champion
(`AGENTLOOP_EXPECTED_CHAMPION`, as next_iteration leaves it) — two first iterations with no champion yet, and two
later ones from one champion. Exactly one moves `champion`; the other stops with PromotionOvertaken in one line;
both versions stay registered; nothing else moved."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from pipeline.loop.params import load_params
from pipeline.loop.track import track_and_promote
from pipeline.tracking import TrackingConfig
from tests.team.stack import ROOT, running_stack
from tests.team.test_stack import make_repo, registry, weights

pytestmark = pytest.mark.slow

RACER = """
import sys, time
from pipeline.loop import entry
from pipeline.loop.track import track_and_promote

entry.resolve_params = lambda *args: None  # these params name no worlds or checkpoints to resolve
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
entry.run_stage("promote", track_and_promote)
"""


@pytest.fixture(scope="module")
def stack():
    with running_stack() as s:
        yield s


@pytest.mark.parametrize("champion", ["none", "1"])
def test_two_runs_racing_on_the_registry_move_champion_once(stack, tmp_path, monkeypatch, champion):
    name = f"race-{champion}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", stack.url)
    monkeypatch.delenv("AGENTLOOP_PROMOTE", raising=False)
    monkeypatch.delenv("AGENTLOOP_EXPECTED_CHAMPION", raising=False)
    before = []
    if champion != "none":  # an earlier iteration made version 1 the champion
        first = make_repo(tmp_path / "first", name)
        monkeypatch.chdir(first)
        assert track_and_promote(load_params(first / "params.yaml"))["model_version"] == champion
        before = [1]
    repos = {}
    for tag in ("a", "b"):  # two pushes: two commits, two different candidates
        repos[tag] = make_repo(tmp_path / tag, name)
        weights(repos[tag], f"racer {tag}")
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run([*git, "init", "-q"], cwd=repos[tag], check=True)
        subprocess.run([*git, "add", "-A"], cwd=repos[tag], check=True)
        subprocess.run([*git, "commit", "-qm", f"push {tag}"], cwd=repos[tag], check=True)
    env = {
        **os.environ,
        **stack.exports,
        "PYTHONPATH": str(ROOT),
        "AGENTLOOP_EXPECTED_CHAMPION": champion,
        "AGENTLOOP_LOG": "WARNING",
    }
    start = time.time() + 10  # both imported and waiting by then
    procs = {
        tag: subprocess.Popen(
            [sys.executable, "-c", RACER, str(start)],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for tag, repo in repos.items()
    }
    done = {tag: (p.communicate(timeout=300), p.returncode) for tag, p in procs.items()}

    for tag, ((out, err), _) in done.items():
        (tmp_path / f"{tag}.log").write_text(out + err)
    rcs = sorted(rc for _, rc in done.values())
    assert rcs == [0, 2], {tag: (rc, err[-2000:]) for tag, ((_, err), rc) in done.items()}
    winner = next(tag for tag, (_, rc) in done.items() if rc == 0)
    loser = next(tag for tag in repos if tag != winner)
    record = json.loads((repos[winner] / "gate" / "promotion.json").read_text())
    assert record["champion_moved"] is True
    last = done[loser][0][1].strip().splitlines()[-1]
    against = "no champion" if champion == "none" else f"version {champion}"
    assert last.startswith(f"stage promote: {name} champion moved while this run trained: it is version"), last
    assert f"this run was gated against {against}" in last and "is registered but not promoted" in last, last
    versions, aliases = registry(stack, name)
    assert len(versions) == len(before) + 2  # both candidates registered: no version lost
    assert aliases["champion"] == record["model_version"]
    client = TrackingConfig(tracking_uri=stack.url).client()
    moves = [v for v in versions if "agentloop.promoted_over" in client.get_model_version(name, str(v)).tags]
    assert len(moves) == len(before) + 1  # exactly one champion move for the race
    # each push has an iteration run of its own: the winner's finished, the loser's failed, and neither ended
    # the other's stage runs as stale
    won = client.get_run(json.loads((repos[winner] / "gate" / "tracking.json").read_text())["run_id"])
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repos[loser], capture_output=True, text=True).stdout
    (lost,) = client.search_runs(
        [won.info.experiment_id],
        filter_string=f"tags.`agentloop.kind` = 'iteration' and tags.`agentloop.git_commit` = '{commit.strip()}'",
    )
    assert (won.info.status, lost.info.status) == ("FINISHED", "FAILED")
    for run in (won, lost):
        killed = client.search_runs(
            [won.info.experiment_id],
            filter_string=f"tags.`mlflow.parentRunId` = '{run.info.run_id}' and attributes.status = 'KILLED'",
        )
        assert not killed, [r.info.run_name for r in killed]
