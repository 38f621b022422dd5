"""The shared stack (scripts/stack.sh): the promote stage, the registry and the champion's files go through a real
MLflow server on PostgreSQL with served artifacts; `dvc push` / `dvc pull` go through the shared remote; and the
faults: the server stopped between steps, a promote killed mid-registration, a remote that is not there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.loop.params import Params, load_params
from pipeline.loop.stages import build_baseline
from pipeline.loop.track import track_and_promote
from pipeline.tracking import TrackingConfig
from pipeline.tracking.registry import DIGEST_TAG
from tests.team.stack import ROOT, Stack, running_stack
from tests.tracking.promote_inputs import promote_inputs, weights

pytestmark = pytest.mark.slow

BOUND_S = 90


@pytest.fixture(scope="module")
def stack():
    with running_stack() as s:
        yield s


@pytest.fixture
def team(stack, monkeypatch):
    """The environment a job gets from `scripts/stack.sh env` (and the server up, whatever a test did before)."""
    stack.run("up")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", stack.url)
    monkeypatch.delenv("AGENTLOOP_PROMOTE", raising=False)
    return stack


def make_repo(repo: Path, model_name: str) -> Path:
    """The inputs the promote stage reads, registering into `model_name` (a model of each test's own)."""
    return promote_inputs(repo, model_name=model_name)


@pytest.fixture
def repo(team, tmp_path, monkeypatch, request):
    repo = make_repo(tmp_path / "repo", request.node.name.replace("[", "-").rstrip("]"))
    monkeypatch.chdir(repo)
    return repo


def registry(stack: Stack, name: str) -> tuple[list[int], dict[str, str]]:
    """(versions, aliases) of a registered model, read from the server."""
    client = TrackingConfig(tracking_uri=stack.url).client()
    versions = sorted(int(v.version) for v in client.search_model_versions(f"name = '{name}'"))
    return versions, dict(client.get_registered_model(name).aliases) if versions else {}


STAGE = """
import os, signal, sys
from pipeline.loop import entry
from pipeline.loop.track import track_and_promote
from tests.team.stack import stop_server

entry.resolve_params = lambda *args: None  # these params name no worlds or checkpoints to resolve
point, stack_dir = sys.argv[1], sys.argv[2]

def at(point_here, real, then):
    def wrapped(*args, **kwargs):
        if point_here == point and then == "stop":
            stop_server(__import__("pathlib").Path(stack_dir))
        result = real(*args, **kwargs)
        to_checkpoint = any(str(a).startswith("checkpoint") for a in args[2:])  # checkpoint or checkpoint-<digest>
        if point_here == point and then == "kill" and (point != "upload" or to_checkpoint):
            os.kill(os.getpid(), signal.SIGKILL)
        return result
    return wrapped

import pipeline.tracking as tracking
from mlflow import MlflowClient
from pipeline.tracking.tracker import RunLogger

then = os.environ["STOP_OR_KILL"]
tracking.register_checkpoint = at("register", tracking.register_checkpoint, then)
tracking.promote = at("promote", tracking.promote, then)
RunLogger.log_artifact = at("upload", RunLogger.log_artifact, then)
MlflowClient.create_model_version = at("create", MlflowClient.create_model_version, then)
entry.run_stage("promote", track_and_promote)
"""


def promote_stage(stack: Stack, repo: Path, point: str, then: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STOP_OR_KILL": then}
    return subprocess.run(
        [sys.executable, "-c", STAGE, point, str(stack.dir)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=BOUND_S + 60,
    )


def test_the_script_is_idempotent_and_says_what_a_job_exports(stack):
    pid = stack.server_pid()
    again = stack.run("up")
    assert stack.server_pid() == pid  # left running, not started twice
    assert stack.run("env").stdout == again.stdout
    assert set(stack.exports) == {
        "MLFLOW_TRACKING_URI",
        "AGENTLOOP_REGISTRY_LOCK_URL",
        "AGENTLOOP_DVC_REMOTE",
        "AGENTLOOP_DVC_REMOTE_URL",
    }
    assert stack.url.startswith("http://127.0.0.1:")
    status = stack.run("status")
    assert "mlflow: running at " + stack.url in status.stdout and "postgres: running" in status.stdout
    assert os.getpgid(pid) == pid  # a process group of its own, stopped as one
    assert "--workers 1" in " ".join(Path(f"/proc/{pid}/cmdline").read_text().split("\0"))


def test_promote_registers_on_the_server_with_postgres_and_served_artifacts(repo, team):
    import psycopg

    name = yaml.safe_load((repo / "params.yaml").read_text())["promote"]["model_name"]
    record = track_and_promote(load_params(repo / "params.yaml"))
    assert record["tracking_uri"] == team.url and record["model_version"] == "1" and record["champion_moved"]
    assert registry(team, name) == ([1], {"champion": "1", "challenger": "1"})
    mv = TrackingConfig(tracking_uri=team.url).client().get_model_version(name, "1")
    assert mv.source.startswith("mlflow-artifacts:/")  # no path of the server's machine
    run = TrackingConfig(tracking_uri=team.url).client().get_run(record["run_id"])
    assert run.inputs.dataset_inputs  # the held-out tasks, logged as a dataset on the server
    pg = team.run("status").stdout.split("postgres: running on 127.0.0.1:")[1].split()[0]
    with psycopg.connect(f"postgresql://agentloop@127.0.0.1:{pg}/mlflow") as conn:
        rows = conn.execute("SELECT version FROM model_versions WHERE name = %s", (name,)).fetchall()
    assert rows == [(1,)]  # the registry lives in PostgreSQL
    assert any((team.dir / "artifacts").rglob("model.safetensors"))  # and the files behind the server


def test_the_champion_is_fetched_from_the_server_by_another_working_directory(repo, team, tmp_path, monkeypatch):
    name = yaml.safe_load((repo / "params.yaml").read_text())["promote"]["model_name"]
    track_and_promote(load_params(repo / "params.yaml"))
    trained = (repo / "models" / "candidate" / "model.safetensors").read_bytes()
    elsewhere = tmp_path / "another-machine"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    shutil.rmtree(repo)  # nothing of the machine that trained it is left to read
    spec = build_baseline(Params.model_validate({"baseline": {"source": "champion"}, "promote": {"model_name": name}}))
    baseline = elsewhere / "models" / "baseline"
    assert spec == "hf:models/baseline/checkpoint"
    assert (baseline / "checkpoint" / "model.safetensors").read_bytes() == trained
    ref = json.loads((baseline / "agent.json").read_text())
    assert ref["version"] == "1" and ref["source"] == "champion" and str(repo) not in json.dumps(ref)


@pytest.mark.parametrize("point", ["register", "promote"])
def test_a_server_stopped_between_steps_fails_the_stage_in_one_line(repo, team, point):
    name = yaml.safe_load((repo / "params.yaml").read_text())["promote"]["model_name"]
    track_and_promote(load_params(repo / "params.yaml"))  # iteration 1: version 1 is champion
    before = registry(team, name)
    weights(repo, "second")
    failed = promote_stage(team, repo, point, "stop")
    assert failed.returncode == 1, failed.stderr[-3000:]
    assert "Traceback" not in failed.stderr, failed.stderr[-3000:]
    last = failed.stderr.strip().splitlines()[-1]
    assert last.startswith(f"stage promote: MLflow at {team.url}"), last
    team.run("up")
    client = TrackingConfig(tracking_uri=team.url).client()
    if point == "register":  # stopped before anything was registered: the registry as it was
        assert registry(team, name) == before
    else:  # stopped after the candidate was registered, before the gate's move: the champion has not moved,
        # and the new version is whole (its digest tag and the challenger alias), found again by a rerun
        assert registry(team, name) == ([1, 2], {"champion": "1", "challenger": "2"})
        assert client.get_model_version(name, "2").tags[DIGEST_TAG]
    again = track_and_promote(load_params(repo / "params.yaml"))
    assert again["model_version"] == "2" and again["champion_version"] == "2"
    assert registry(team, name) == ([1, 2], {"champion": "2", "challenger": "2"})


@pytest.mark.parametrize("point", ["upload", "create"])
def test_a_promote_killed_mid_registration_leaves_nothing_half_registered(repo, team, point):
    name = yaml.safe_load((repo / "params.yaml").read_text())["promote"]["model_name"]
    track_and_promote(load_params(repo / "params.yaml"))
    weights(repo, "second")
    killed = promote_stage(team, repo, point, "kill")
    assert killed.returncode == -9, killed.stderr[-3000:]
    client = TrackingConfig(tracking_uri=team.url).client()
    versions, aliases = registry(team, name)
    assert aliases == {"champion": "1", "challenger": "1"}
    if point == "create":  # a version exists only with all its tags (one request creates both)
        assert versions == [1, 2]
        tags = client.get_model_version(name, "2").tags
        assert tags[DIGEST_TAG] and tags["agentloop.iteration"]
    else:
        assert versions == [1]
    again = track_and_promote(load_params(repo / "params.yaml"))
    assert again["model_version"] == "2"  # the rerun finds the version by its digest: no third one
    assert registry(team, name) == ([1, 2], {"champion": "2", "challenger": "2"})


def _dvc(cwd: Path, *args: str) -> str:
    done = subprocess.run(["dvc", *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"dvc {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


STAGE_CMD = (
    "python -c \"import pathlib; pathlib.Path('out').mkdir(exist_ok=True); "
    "pathlib.Path('out/data.txt').write_text(open('in.txt').read() * 2); "
    "open('../computed.log', 'a').write('computed\\n')\""
)


@pytest.fixture
def dvc_repo(stack, tmp_path, monkeypatch):
    monkeypatch.setenv("DVC_NO_ANALYTICS", "1")
    repo = tmp_path / "trainer" / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _dvc(repo, "init", "-q")
    (repo / "in.txt").write_text("hello\n")
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"make": {"cmd": STAGE_CMD, "deps": ["in.txt"],
                                                                        "outs": ["out"]}}}))  # fmt: skip
    _dvc(repo, "repro", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "pipeline")
    return repo


def test_push_then_pull_into_a_fresh_clone_restores_outputs_without_recomputing(stack, dvc_repo, tmp_path):
    config = (dvc_repo / ".dvc" / "config").read_bytes()
    assert "team" in stack.run("remote", str(dvc_repo)).stdout
    assert (dvc_repo / ".dvc" / "config").read_bytes() == config  # the committed config unchanged
    assert _git(dvc_repo, "status", "--porcelain") == ""
    stack.run("push", str(dvc_repo))
    clone = tmp_path / "teammate" / "repo"
    clone.parent.mkdir()
    _git(tmp_path, "clone", "-q", str(dvc_repo), str(clone))
    stack.run("remote", str(clone))
    stack.run("pull", str(clone))
    assert (clone / "out" / "data.txt").read_text() == "hello\nhello\n"
    assert "up to date" in _dvc(clone, "status")
    _dvc(clone, "repro", "-q")
    assert not (clone.parent / "computed.log").exists()  # the teammate's repro computed nothing
    assert (dvc_repo.parent / "computed.log").read_text() == "computed\n"


def test_a_remote_that_is_not_there_fails_in_one_line(stack, dvc_repo, tmp_path):
    stack.run("remote", str(dvc_repo))
    unmounted = tmp_path / "share"  # a mount point with nothing mounted
    unmounted.mkdir()
    for verb in ("pull", "push", "remote"):
        done = stack.run(verb, str(dvc_repo), check=False, env={"AGENTLOOP_DVC_REMOTE_URL": str(unmounted)})
        assert done.returncode == 1
        assert done.stderr.strip().splitlines() == [
            f"stack.sh: DVC remote team ({unmounted}) is not reachable: no .agentloop-dvc-remote there"
            " (not mounted, or run 'scripts/stack.sh up')"
        ]
    assert list(unmounted.iterdir()) == []  # nothing pushed into the empty folder


def test_down_stops_everything_and_up_brings_back_the_same_registry(stack):
    client = TrackingConfig(tracking_uri=stack.url).client()
    client.create_registered_model("kept-across-restarts")
    pid = stack.server_pid()
    assert "mlflow: stopped" in stack.run("down").stdout
    assert stack.run("down").returncode == 0  # idempotent
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)  # no process of the group is left
    assert stack.run("status", check=False).returncode == 3
    stack.run("up")
    assert client.get_registered_model("kept-across-restarts").name == "kept-across-restarts"


def test_traces_go_to_the_server_on_postgres(team, tmp_path, monkeypatch):
    from mlflow import MlflowClient

    from tests.tracking.test_server_traces import MEASURED, N_TASKS, TRIALS, _all, log_iterations

    monkeypatch.chdir(tmp_path)
    logged = log_iterations(tmp_path, team.url)
    traces = _all(MlflowClient(tracking_uri=team.url), logged["experiment_id"])
    assert len(traces) == len(MEASURED) * N_TASKS * TRIALS
    assert {t.info.tags["agentloop.iteration"] for t in traces} == {"1", "2"}
