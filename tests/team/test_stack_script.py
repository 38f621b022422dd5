"""scripts/stack.sh without starting anything: what `env` prints, and one line for each wrong input."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.team.stack import SCRIPT


def stack_sh(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_STACK", "AGENTLOOP_DVC", "AGENTLOOP_PG"))
    }
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env={**base, "AGENTLOOP_STACK_DIR": str(tmp_path / "stack"), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_env_prints_what_a_job_exports(tmp_path):
    done = stack_sh(tmp_path, "env", AGENTLOOP_STACK_PORT="56001", AGENTLOOP_DVC_REMOTE_URL="/mnt/share/dvc")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "export MLFLOW_TRACKING_URI=http://127.0.0.1:56001"
    assert lines[1].startswith("export AGENTLOOP_REGISTRY_LOCK_URL=postgresql://") and lines[1].endswith("/mlflow")
    assert lines[2:] == ["export AGENTLOOP_DVC_REMOTE=team", "export AGENTLOOP_DVC_REMOTE_URL=/mnt/share/dvc"]
    default = stack_sh(tmp_path, "env").stdout
    assert f"AGENTLOOP_DVC_REMOTE_URL={tmp_path / 'stack' / 'dvc-remote'}" in default


def test_wrong_inputs_fail_in_one_line(tmp_path):
    not_dvc = tmp_path / "plain"
    not_dvc.mkdir()
    dvc_repo = tmp_path / "repo"
    (dvc_repo / ".dvc").mkdir(parents=True)
    cases = [
        (("env",), {"AGENTLOOP_STACK_PORT": "http"}, 1, "AGENTLOOP_STACK_PORT 'http': expected a TCP port"),
        (("env",), {"AGENTLOOP_DVC_REMOTE": "a b"}, 1, "AGENTLOOP_DVC_REMOTE 'a b'"),
        (("restart",), {}, 2, "usage: scripts/stack.sh up | down"),
        (("env", "extra"), {}, 2, "usage: "),
        (("remote", str(not_dvc)), {}, 1, f"{not_dvc}: not a DVC repository"),
        (("pull", str(dvc_repo)), {}, 1, "DVC remote team ("),
        (("push", str(dvc_repo)), {}, 1, "is not reachable: no .agentloop-dvc-remote there"),
    ]
    for args, env, status, message in cases:
        done = stack_sh(tmp_path, *args, **env)
        assert done.returncode == status, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, lines)
    assert not (tmp_path / "stack" / "dvc-remote").exists()  # a pull or push creates no remote
