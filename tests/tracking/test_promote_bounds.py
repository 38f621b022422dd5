"""Promote against an MLflow server that is down from the start, or killed part-way: the stage ends within 60 s
with one line naming the server's URI, no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.tracking.bounds import TrackingUnavailableError, check_reachable, tracking_errors
from tests.tracking.server import free_port
from tests.tracking.test_promote_recovery import loop_dir  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[2]
BOUND_S = 60
STAGE = """
import sys
from pipeline.loop import entry
from pipeline.loop.track import track_and_promote

entry.resolve_params = lambda *args: None  # this test's params name no worlds or checkpoints to resolve
entry.run_stage("promote", track_and_promote)
"""


def run_promote(cwd: Path, uri: str) -> subprocess.Popen:
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", STAGE], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def one_line_error(proc: subprocess.Popen, uri: str, within_s: float) -> str:
    _, err = proc.communicate(timeout=within_s)
    assert proc.returncode == 1, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("stage promote: MLflow at " + uri), last
    return last


def test_a_server_down_from_the_start_is_named_at_once(loop_dir):  # noqa: F811
    uri = f"http://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    last = one_line_error(run_promote(loop_dir, uri), uri, BOUND_S)
    assert "not reachable" in last and time.monotonic() - t0 < BOUND_S


def test_errors_inside_become_one_line():
    from mlflow.exceptions import MlflowException

    failed = pytest.raises(TrackingUnavailableError, match=r"^MLflow at http://x: API request failed$")
    with failed, tracking_errors("http://x"):
        raise MlflowException("API request failed\nwith a long tail")
    check_reachable("sqlite:///nowhere.db")  # a file store has no server to ask


@pytest.mark.slow
def test_a_server_killed_mid_promote_ends_it_within_the_bound(loop_dir, mlflow_template, tmp_path):  # noqa: F811
    import shutil
    import urllib.request

    db = tmp_path / "server.db"
    shutil.copy(mlflow_template, db)
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    env = dict(os.environ, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false", MLFLOW_DISABLE_TELEMETRY="true")
    cmd = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
           "--backend-store-uri", f"sqlite:///{db}", "--artifacts-destination", str(tmp_path / "art")]  # fmt: skip
    server = subprocess.Popen(
        cmd, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "mlflow server did not come up"
                time.sleep(0.3)
        promote = run_promote(loop_dir, uri)
        client_runs = 0
        while client_runs == 0 and time.monotonic() < deadline + 60:  # part-way: the iteration run exists
            time.sleep(0.2)
            with urllib.request.urlopen(f"{uri}/ajax-api/2.0/mlflow/experiments/search?max_results=10") as r:
                client_runs = b'"agentloop"' in r.read()
        os.killpg(server.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        assert promote.poll() is None, "promote finished before the server was killed"
        one_line_error(promote, uri, BOUND_S + 5)
        assert time.monotonic() - killed_at < BOUND_S
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=15)
