"""One local Ray instance for the whole test session (2 CPUs, no dashboard, no auth)."""

from __future__ import annotations

import os

import pytest

from tests.needs import need_module


@pytest.fixture(scope="session")
def ray_cluster():
    ray = need_module("ray", install='pip install -e ".[dev]"')
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()
