"""`dvc exp run` of the whole loop on an environment of one's own behind the six functions (examples/library.py:
plain Python, no table format), in process: tasks, scripted participants and synthesis grown from its tools by
execution, a flawed baseline, the oracle as the training method, promoted."""

from __future__ import annotations

import json

import pytest

from tests.domains.one_world import exp_run_one_world

BASELINE = "flawed:invention=0.4,misread=0.4,plan_adherence=0.3"


@pytest.mark.slow
def test_the_loop_promotes_on_an_environment_reached_through_its_functions(tmp_path):
    repo = exp_run_one_world(tmp_path, "examples.library:Library", "library-0", BASELINE)
    gate = json.loads((repo / "gate" / "gate.json").read_text())
    assert gate["promote"] is True and gate["pass_hat_k"]["candidate"] > gate["pass_hat_k"]["champion"]
    verdicts = (repo / "runs" / "baseline" / "verdicts.jsonl").read_text()
    assert '"environment_reward"' in verdicts  # the environment's own score, beside the loop's verdict


@pytest.mark.slow
def test_the_loop_promotes_on_an_environment_on_postgresql(tmp_path, postgres_url, monkeypatch):
    monkeypatch.setenv("AGENTLOOP_PG_URL", postgres_url)
    repo = exp_run_one_world(tmp_path, "examples.postgres_env:PostgresEnvironment", "pg-0", BASELINE)
    gate = json.loads((repo / "gate" / "gate.json").read_text())
    assert gate["promote"] is True and gate["pass_hat_k"]["candidate"] > gate["pass_hat_k"]["champion"]
