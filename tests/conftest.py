"""Shared fixtures: the τ²-bench retail and airline data (where absent: skipped with a reason, failed under
CI=true) and a small generated world."""

from __future__ import annotations

import os
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
