"""Shared fixtures: the τ²-bench retail and airline data (where absent: skipped with a reason, failed under
CI=true), a small generated world, and a PostgreSQL server of the session's own (scripts/postgres.sh)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def tau2_dir() -> Path:
    """τ²-bench's retail data set (pipeline.tau2.data: AGENTLOOP_TAU2_RETAIL, AGENTLOOP_SHARED or ../shared)."""
    from tests.needs import need_tau2

    return need_tau2("retail")


@pytest.fixture(scope="session")
def tau2_airline_dir() -> Path:
    """τ²-bench's airline data set, found as `tau2_dir` is."""
    from tests.needs import need_tau2

    return need_tau2("airline")


@pytest.fixture(scope="session")
def tau2_world(tau2_dir):
    from pipeline.domains.retail.worlds import world_from_json

    return world_from_json(tau2_dir / "db.json", name="tau2_retail")


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server started by scripts/postgres.sh on a fresh data directory and a free port, stopped at the
    end of the session; the URL of its `agentloop` database. Without PostgreSQL's server the tests that use it skip
    (fail under CI=true); a server that does not start fails them."""
    from tests.needs import need_postgres

    need_postgres()
    folder = tempfile.mkdtemp(prefix="agentloop-pg-")  # under /tmp: the server's own user can reach it
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "AGENTLOOP_PG_DIR": folder, "AGENTLOOP_PG_PORT": str(port)}
    script = Path(__file__).resolve().parents[1] / "scripts" / "postgres.sh"
    started = subprocess.run(["bash", str(script), "start"], env=env, capture_output=True, text=True, timeout=180)
    if started.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(f"scripts/postgres.sh start failed: {started.stderr.strip()}", pytrace=False)
    try:
        yield started.stdout.strip().splitlines()[-1]
    finally:
        try:
            from examples.postgres_env import close_idle_connections

            close_idle_connections()
        finally:
            subprocess.run(["bash", str(script), "stop"], env=env, capture_output=True, timeout=120)
            shutil.rmtree(folder, ignore_errors=True)
