"""A real endpoint nobody here wrote, with a real model behind it: `llama_cpp.server` (llama-cpp-python[server])
serves the SmolLM2-135M-Instruct GGUF as an OpenAI-compatible server, and one measure drives all three roles that
speak to endpoints through it: the `openai` agent and the `tau2-llm` customer on an imported τ²-bench task, each
with its bounded reply length recorded in the run's settings, then the LLM judge on their conversation. Skipped
without the package (scripts/setup.sh builds it from source, 13 CPU-minutes) or the GGUF; under CI=true, failed."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from pipeline.dataset.io import write_tasks
from pipeline.grading import grade
from pipeline.grading.llm_judge import make_judge
from pipeline.measure import MeasureConfig, measure
from pipeline.rollout.runner import Limits
from pipeline.rollout.trajectory import Trajectory
from pipeline.tau2.importer import import_tau2
from pipeline.world.registry import load_world
from tests.agents.smollm2 import llama_cpp_server
from tests.needs import need_module

pytestmark = pytest.mark.slow
TASK_ID = "10"  # a look-up: the customer asks about their own records
AGENT_TOKENS, USER_TOKENS = 48, 40
INSTALL = 'pip install "llama-cpp-python[server]"'


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from llama_cpp_server(tmp_path_factory.mktemp("llama"))


def test_agent_customer_and_judge_through_llama_cpp(server, tau2_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTLOOP_BASE_URL", server)
    monkeypatch.setenv("AGENTLOOP_API_KEY", "none")
    tasks = [t for t in import_tau2(tau2_dir, "base").tasks if t.id == TASK_ID]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    config = MeasureConfig(
        world=str(tau2_dir),
        tasks=tmp_path / "tasks.jsonl",
        agent=f"openai:smollm2,max_tokens={AGENT_TOKENS}",
        user=f"tau2-llm:smollm2@{server},max_tokens={USER_TOKENS}",
        trials=1,
        limits=Limits(max_turns=6),
        concurrency=1,
    )
    started = time.monotonic()
    summary = measure(config, tmp_path / "run")
    took = time.monotonic() - started
    line = (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()[0]
    trajectory = Trajectory.model_validate_json(line)
    usage = json.loads((tmp_path / "run" / "usage.json").read_text())

    assert summary.infra_errors == 0 and trajectory.error is None, trajectory.error  # answered in time
    spoken = [m for m in trajectory.messages if m.role in ("assistant", "user") and m.content]
    assert {m.role for m in spoken} == {"assistant", "user"}, trajectory.messages
    assert usage["agent"]["settings"]["max_tokens"] == AGENT_TOKENS
    assert usage["user"]["settings"]["max_tokens"] == USER_TOKENS
    replies = sum(1 for m in trajectory.messages if m.role == "assistant")
    assert 0 < usage["agent"]["completion_tokens"] <= AGENT_TOKENS * replies  # every reply within its bound
    assert took < 600, f"one bounded trial took {took:.0f} s"

    # The judge on the same conversation: a verdict with its component, or, when a 135M model cannot write the
    # JSON it is asked for, the trial left out as infrastructure with a message naming the judge (not a guess).
    judge = make_judge("llm:smollm2")
    verdict = grade(load_world(str(tau2_dir)), tasks[0], trajectory, limits=config.limits, judge=judge)
    assert judge.usage.prompt_tokens > 0 and judge.usage.completion_tokens > 0
    if verdict.infra_error:
        assert "judge" in verdict.diagnostics[0] and "readable" in verdict.diagnostics[0], verdict.diagnostics
    else:
        assert verdict.component("judge") is not None


def test_the_llama_cpp_build_is_portable():
    """scripts/setup.sh builds llama.cpp for no instruction set past AVX2, so the test command passes on every
    machine CI lands on (a build tuned to an AMX machine died on its first completion); its system info says so."""
    need_module("llama_cpp", INSTALL)
    done = subprocess.run([sys.executable, "scripts/llama_cpp_portable.py"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "AVX512 = 1" not in done.stdout and "AMX" not in done.stdout, done.stdout


def test_the_portability_check_reads_the_features_compiled_in():
    from scripts.llama_cpp_portable import compiled_features

    info = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 0 | AMX_INT8 = 1 | LLAMAFILE = 1 |"
    assert compiled_features(info) == {"SSE3", "AVX", "AVX2", "AMX_INT8", "LLAMAFILE"}
