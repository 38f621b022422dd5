"""The shared stack (scripts/stack.sh) for a test: its own folder under /tmp and free ports, torn down after."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "stack.sh"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Stack:
    dir: Path
    env: dict[str, str]  # the environment scripts/stack.sh runs with (its folder and ports)
    exports: dict[str, str]  # what `scripts/stack.sh env` exports

    @property
    def url(self) -> str:
        return self.exports["MLFLOW_TRACKING_URI"]

    def run(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run(
            ["bash", str(SCRIPT), *args], env={**self.env, **(env or {})}, capture_output=True, text=True, timeout=300
        )
        if check and done.returncode != 0:
            pytest.fail(f"scripts/stack.sh {' '.join(args)}: {done.stderr.strip()}", pytrace=False)
        return done

    def server_pid(self) -> int:
        return int((self.dir / "mlflow.pid").read_text())

    def stop_server(self) -> None:
        """Stop the MLflow server only (its process group), as a crash would; `up` brings it back."""
        stop_server(self.dir)


def stop_server(stack_dir: Path) -> None:
    pid = int((stack_dir / "mlflow.pid").read_text())
    os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)


def parse_exports(text: str) -> dict[str, str]:
    found = {}
    for line in text.splitlines():
        if line.startswith("export "):
            key, _, value = line.removeprefix("export ").partition("=")
            found[key] = value
    return found


@contextmanager
def running_stack() -> Iterator[Stack]:
    """`scripts/stack.sh up` in a folder of its own (under /tmp: PostgreSQL's own user can reach it), `down` after."""
    from tests.needs import need_postgres

    need_postgres()
    folder = Path(tempfile.mkdtemp(prefix="agentloop-stack-"))
    folder.chmod(0o755)  # PostgreSQL's own user goes through it to its cluster
    env = {
        **os.environ,
        "AGENTLOOP_STACK_DIR": str(folder),
        "AGENTLOOP_STACK_PORT": str(free_port()),
        "AGENTLOOP_PG_PORT": str(free_port()),
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DVC_NO_ANALYTICS": "1",
    }
    env.pop("AGENTLOOP_PG_DIR", None)
    env.pop("AGENTLOOP_DVC_REMOTE_URL", None)
    stack = Stack(folder, env, {})
    try:
        stack.exports = parse_exports(stack.run("up").stdout)
        yield stack
    finally:
        stack.run("down", check=False)
        shutil.rmtree(folder, ignore_errors=True)
