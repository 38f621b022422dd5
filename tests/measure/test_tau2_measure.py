"""A measure of imported τ²-bench retail tasks, end to end, with the oracle agent and the τ²-convention LLM user
talking to a local OpenAI-compatible stand-in: from the CLI, and from the DVC stage with `measure.user` and
`measure.tasks`."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.dataset.io import write_tasks
from pipeline.loop import paths, stages
from pipeline.loop.agentref import write_agent_ref
from pipeline.loop.params import Params
from pipeline.tau2.importer import import_tau2
from tests.agents.fake_openai import FakeOpenAI
from tests.users.scenario_standin import scenario_reply

TASK_IDS = ("0", "10", "12")  # an exchange (the oracle plays generated tasks' requests only) and two look-ups


@pytest.fixture(scope="module")
def tasks_file(tau2_dir, tmp_path_factory):
    tasks = [t for t in import_tau2(tau2_dir, "base").tasks if t.id in TASK_IDS]
    path = tmp_path_factory.mktemp("tau2") / "tasks.jsonl"
    write_tasks(path, tasks)
    return path


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_cli_measure_with_the_tau2_user(tau2_dir, tasks_file, tmp_path):
    out = tmp_path / "run"
    with FakeOpenAI(default=scenario_reply) as fake:
        result = CliRunner().invoke(
            app,
            [
                "measure",
                "--world",
                str(tau2_dir),
                "--tasks",
                str(tasks_file),
                "--agent",
                "oracle",
                "--user",
                f"tau2-llm:standin@{fake.base_url},temperature=0.2",
                "--trials",
                "2",
                "--out",
                str(out),
            ],
        )
        n_requests = len(fake.requests)
    assert result.exit_code == 0, result.output
    trajectories = _lines(out / "trajectories.jsonl")
    assert len(trajectories) == 6 and {t["termination"] for t in trajectories} == {"user_stop"}
    assert all(t["user"] == "tau2-llm:standin" for t in trajectories)
    for t in trajectories:
        said = [m["content"] for m in t["messages"] if m["role"] == "user"]
        assert len(said) >= 3 and said[-1].endswith("###STOP###")
        assert any(e["name"].startswith("find_user_id") and e["ok"] for e in t["world_log"])  # authenticated
    assert n_requests == sum(sum(1 for m in t["messages"] if m["role"] == "user") for t in trajectories)
    usage = json.loads((out / "usage.json").read_text())
    assert usage["user"]["name"] == "tau2-llm:standin"
    assert usage["user"]["settings"]["model"] == "standin"
    assert usage["user"]["settings"]["base_url"] == fake.base_url
    assert usage["user"]["settings"]["temperature"] == 0.2
    assert usage["user"]["prompt_tokens"] == 11 * n_requests
    rows = {r["task_id"]: r for r in csv.DictReader((out / "per_task.csv").open())}
    assert {k: rows[k]["passes"] for k in TASK_IDS} == {"0": "0", "10": "2", "12": "2"}
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["valid_trials"] == 6 and metrics["infra_errors"] == 0


def test_stage_measures_the_tasks_file_with_the_configured_user(tau2_dir, tasks_file, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_agent_ref(paths.BASELINE_MODEL, "oracle")
    with FakeOpenAI(default=scenario_reply) as fake:
        p = Params.model_validate(
            {
                "world": {"eval_world": str(tau2_dir)},
                "gate": {"k": 1},
                "measure": {
                    "trials": 1,
                    "executor": "serial",
                    "resamples": 50,
                    "user": f"tau2-llm:standin@{fake.base_url}",
                    "tasks": str(tasks_file),
                },
            }
        )
        summary = stages.measure_baseline(p)
    assert stages.eval_tasks_file(p) == tasks_file
    assert summary.tasks == len(TASK_IDS) and summary.valid_trials == len(TASK_IDS)
    usage = json.loads((paths.BASELINE_RUN / "usage.json").read_text())
    assert usage["user"]["settings"]["kind"] == "tau2-llm"
    assert {t["task_id"] for t in _lines(paths.BASELINE_RUN / "trajectories.jsonl")} == set(TASK_IDS)
