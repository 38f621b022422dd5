"""`pipeline/` type-checks clean under mypy as pyproject.toml's [tool.mypy] configures it (CI runs it beside ruff)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # a cold run (no .mypy_cache) takes minutes on two cores; a warm rerun about 25 s
def test_pipeline_type_checks_clean():
    # mypy is a dev dependency (scripts/setup.sh installs it); its cache (.mypy_cache/) makes reruns incremental.
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"mypy found errors:\n{proc.stdout}\n{proc.stderr}"
