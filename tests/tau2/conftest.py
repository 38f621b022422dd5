"""τ²-bench fixtures: the retail domain loaded once."""

from __future__ import annotations

import pytest

from pipeline.domains.retail.worlds import load_tau2_domain


@pytest.fixture(scope="session")
def domain(tau2_dir):
    return load_tau2_domain(tau2_dir)
