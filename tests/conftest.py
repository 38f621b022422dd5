"""Shared fixtures: the τ²-bench retail data (skipped with a reason where absent) and a small generated world."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TAU2_DIR = Path(
    os.environ.get("AGENTLOOP_TAU2_DIR", Path(__file__).resolve().parents[1] / ".." / "shared" / "tau2_retail")
)


@pytest.fixture(scope="session")
def tau2_dir() -> Path:
    from tests.needs import need_path

    need_path(TAU2_DIR / "db.json", "τ²-bench retail data", "set AGENTLOOP_TAU2_DIR, or place it at ../shared")
    return TAU2_DIR.resolve()


@pytest.fixture(scope="session")
def tau2_world(tau2_dir):
    from pipeline.world.retail.state import RetailWorld

    return RetailWorld.from_json(tau2_dir / "db.json", name="tau2_retail")
