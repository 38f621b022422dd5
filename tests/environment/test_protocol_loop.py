"""`dvc exp run` of the whole loop on an environment of one's own behind the six functions (examples/library.py:
plain Python, no table format), in process: tasks, scripted participants and synthesis grown from its tools by
execution, a flawed baseline, the oracle as the training method, promoted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.domains.one_world import exp_run_one_world

BASELINE = "flawed:invention=0.4,misread=0.4,plan_adherence=0.3"
PG = "examples.postgres_env:PostgresEnvironment"
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_loop_promotes_on_an_environment_reached_through_its_functions(tmp_path):
    repo = exp_run_one_world(tmp_path, "examples.library:Library", "library-0", BASELINE)
    gate = json.loads((repo / "gate" / "gate.json").read_text())
    assert gate["promote"] is True and gate["pass_hat_k"]["candidate"] > gate["pass_hat_k"]["champion"]
    verdicts = (repo / "runs" / "baseline" / "verdicts.jsonl").read_text()
    assert '"environment_reward"' in verdicts  # the environment's own score, beside the loop's verdict


@pytest.mark.slow
def test_the_loop_promotes_on_an_environment_on_postgresql(tmp_path, postgres_url, monkeypatch):
    monkeypatch.setenv("AGENTLOOP_PG_URL", postgres_url)
    repo = exp_run_one_world(tmp_path, PG, "pg-0", BASELINE)
    gate = json.loads((repo / "gate" / "gate.json").read_text())
    assert gate["promote"] is True and gate["pass_hat_k"]["candidate"] > gate["pass_hat_k"]["champion"]


@pytest.mark.slow
def test_the_loop_promotes_on_the_postgresql_environment_served_over_http(tmp_path, postgres_url, monkeypatch):
    """The same environment in another process: `agentloop env serve`, and `world.domain` its URL."""
    import os
    import signal
    import subprocess
    import sys

    from tests.server_process import free_port, wait_until_up

    port = free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "AGENTLOOP_PG_URL": postgres_url, "PYTHONPATH": str(ROOT)}
    command = [
        sys.executable,
        "-m",
        "pipeline.cli",
        "env",
        "serve",
        "--domain",
        PG,
        "--worlds",
        "pg-0",
        "--port",
        str(port),
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(proc, f"{url}/worlds", 120, "agentloop env serve", log)
        repo = exp_run_one_world(tmp_path / "repo", url, "pg-0", BASELINE)
        gate = json.loads((repo / "gate" / "gate.json").read_text())
        assert gate["promote"] is True and gate["pass_hat_k"]["candidate"] > gate["pass_hat_k"]["champion"]
        trajectories = (repo / "runs" / "baseline" / "trajectories.jsonl").read_text()
        assert f'"domain":"{url}"' in trajectories  # every episode ran in the served environment
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
