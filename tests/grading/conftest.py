"""Grading fixtures: the τ²-bench retail tasks, converted by the project's own loader."""

from __future__ import annotations

import pytest

from pipeline.dataset.task import Task
from pipeline.domains.retail.worlds import load_tau2_domain


@pytest.fixture(scope="session")
def tau2_tasks(tau2_dir) -> dict[str, Task]:
    return {t.id: t for t in load_tau2_domain(tau2_dir).tasks}
