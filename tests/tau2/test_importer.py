"""`agentloop tasks import-tau2`: τ²-bench tasks keep their scenario, requestors, evaluation criteria and initial
state; splits select the upstream ids; bad input names the file and field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.dataset.io import read_tasks
from pipeline.tau2.importer import import_tau2
from pipeline.world.tables import WorldLoadError
from tests.needs import need_tau2


@pytest.fixture(scope="module")
def airline_dir() -> Path:
    return need_tau2("airline")


@pytest.mark.parametrize(("split", "n"), [("train", 74), ("test", 40), ("base", 114), (None, 114)])
def test_retail_splits_select_the_upstream_ids(tau2_dir, split, n):
    imported = import_tau2(tau2_dir, split)
    assert len(imported.tasks) == n
    if split:
        ids = json.loads((tau2_dir / "split_tasks.json").read_text())[split]
        assert {t.id for t in imported.tasks} == set(ids)
    assert imported.world.domain.name == "retail"


def test_retail_task_keeps_scenario_and_criteria(tau2_dir):
    raw = {t["id"]: t for t in json.loads((tau2_dir / "tasks.json").read_text())}
    tasks = {t.id: t for t in import_tau2(tau2_dir).tasks}
    for task_id, task in tasks.items():
        ins = raw[task_id]["user_scenario"]["instructions"]
        crit = raw[task_id]["evaluation_criteria"]
        sc = task.user_script.scenario
        assert (sc.reason_for_call, sc.known_info, sc.unknown_info, sc.task_instructions) == (
            ins["reason_for_call"],
            ins.get("known_info"),
            ins.get("unknown_info"),
            ins.get("task_instructions"),
        )
        gold = [(a["name"], a["arguments"]) for a in crit["actions"]]
        assert [(a.name, a.arguments) for a in task.gold_actions] == gold
        assert task.evaluation.communicate_info == [str(x) for x in crit.get("communicate_info") or []]
        assert task.evaluation.nl_assertions == (crit.get("nl_assertions") or [])
        assert task.evaluation.reward_basis == crit["reward_basis"]
        assert task.provenance.source == "tau2"


def test_airline_tasks_keep_scenario_and_criteria(airline_dir, tmp_path):
    out = tmp_path / "air.jsonl"
    result = CliRunner().invoke(app, ["tasks", "import-tau2", "--domain", str(airline_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    tasks = read_tasks(out)
    assert len(tasks) == 50
    raw = {t["id"]: t for t in json.loads((airline_dir / "tasks.json").read_text())}
    for task in tasks:
        crit = raw[task.id]["evaluation_criteria"]
        reason = raw[task.id]["user_scenario"]["instructions"]["reason_for_call"]
        assert task.user_script.scenario.reason_for_call == reason
        assert task.evaluation.reward_basis == crit["reward_basis"]
        assert task.evaluation.communicate_info == [str(x) for x in crit.get("communicate_info") or []]
    assert sum(1 for t in tasks if t.evaluation.communicate_info) == sum(
        1 for t in raw.values() if t["evaluation_criteria"].get("communicate_info")
    )
    test = CliRunner().invoke(
        app, ["tasks", "import-tau2", "--domain", str(airline_dir), "--split", "test", "--out", str(out)]
    )
    assert test.exit_code == 0 and len(read_tasks(out)) == 20


def _small_domain(tau2_dir: Path, tmp_path: Path, tasks: list[dict], splits: dict | None = None) -> Path:
    d = tmp_path / "dom"
    d.mkdir()
    for name in ("db.json", "policy.md"):
        shutil.copy(tau2_dir / name, d / name)
    (d / "tasks.json").write_text(json.dumps(tasks))
    if splits is not None:
        (d / "split_tasks.json").write_text(json.dumps(splits))
    return d


def test_requestor_initial_state_and_persona_survive(tau2_dir, tmp_path):
    task = json.loads((tau2_dir / "tasks.json").read_text())[0]
    task["user_scenario"]["persona"] = "A retired teacher who types slowly and double-checks everything."
    # set-up actions now run (on their side, before the first message): a tool of the agent's side runs as a set-up
    setup = {"env_type": "assistant", "func_name": "calculate", "arguments": {"expression": "1+1"}}
    task["initial_state"] = {"initialization_actions": [setup]}
    task["evaluation_criteria"]["actions"][0]["requestor"] = "user"
    task["evaluation_criteria"]["actions"][1]["compare_args"] = ["order_id"]
    d = _small_domain(tau2_dir, tmp_path, [task], {"x": ["0"]})
    out = tmp_path / "t.jsonl"
    result = CliRunner().invoke(app, ["tasks", "import-tau2", "--domain", str(d), "--split", "x", "--out", str(out)])
    assert result.exit_code == 0, result.output
    (got,) = read_tasks(out)
    assert got.user_script.scenario.persona.startswith("A retired teacher")
    assert got.initial_state == task["initial_state"]
    assert [a.requestor for a in got.gold_actions[:2]] == ["user", None]
    assert got.gold_actions[1].compare_args == ["order_id"]


def test_a_set_up_the_domain_cannot_run_is_named(tau2_dir, tmp_path):
    task = json.loads((tau2_dir / "tasks.json").read_text())[0]
    task["initial_state"] = {"initialization_actions": [{"env_type": "user", "func_name": "noop", "arguments": {}}]}
    d = _small_domain(tau2_dir, tmp_path, [task], {"x": ["0"]})
    result = CliRunner().invoke(app, ["tasks", "import-tau2", "--domain", str(d), "--out", str(tmp_path / "t.jsonl")])
    assert result.exit_code == 2
    assert "not supported: [0] (noop): no set-up function or user tool named 'noop'" in result.output


def test_bad_split_and_bad_task_are_named(tau2_dir, tmp_path):
    task = json.loads((tau2_dir / "tasks.json").read_text())[0]
    d = _small_domain(tau2_dir, tmp_path, [task], {"train": ["0"]})
    with pytest.raises(WorldLoadError, match=r"split_tasks.json: no split 'test' \(splits: train\)"):
        import_tau2(d, "test")
    (d / "split_tasks.json").write_text(json.dumps({"train": ["0", "99"]}))
    with pytest.raises(WorldLoadError, match=r"field train: unknown task ids \['99'\]"):
        import_tau2(d, "train")
    del task["user_scenario"]
    (d / "tasks.json").write_text(json.dumps([task]))
    result = CliRunner().invoke(app, ["tasks", "import-tau2", "--domain", str(d), "--out", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 2
    assert "tasks.json: task [0]" in result.output and "user_scenario" in result.output


def test_a_task_with_an_unknown_gold_tool_is_not_written(airline_dir, tmp_path):
    copy = tmp_path / "airline"
    shutil.copytree(airline_dir, copy)
    raw = json.loads((copy / "tasks.json").read_text())
    raw[0]["evaluation_criteria"]["actions"].append({"action_id": "x", "name": "refund_everything", "arguments": {}})
    (copy / "tasks.json").write_text(json.dumps(raw))
    out = tmp_path / "tasks.jsonl"
    result = CliRunner().invoke(app, ["tasks", "import-tau2", "--domain", str(copy), "--out", str(out)])
    assert result.exit_code == 2 and "unknown tool 'refund_everything'" in " ".join(result.output.split())
    assert not out.exists()
