"""τ²-bench imports checked for meaning, not only form: env assertions against their function's signature, a
database's owners and prices, simulations that carry a conversation; and an imported run records what the export
needs (its world's digest, the models the file names)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.tau2.import_run import Tau2ImportError, import_run

DATA = Path(__file__).resolve().parents[1] / "data"
runner = CliRunner()


def _one_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return " ".join(result.output.split())


@pytest.fixture
def telecom_bad_assertion(tmp_path):
    from tests.needs import need_tau2

    folder = tmp_path / "telecom"
    shutil.copytree(need_tau2("telecom"), folder)
    tasks = json.loads((folder / "tasks.json").read_text())
    tasks[0]["evaluation_criteria"]["env_assertions"][0]["arguments"]["no_such_arg"] = 1
    (folder / "tasks.json").write_text(json.dumps(tasks))
    return folder, tasks[0]["id"], tasks[0]["evaluation_criteria"]["env_assertions"][0]["func_name"]


def test_an_env_assertion_its_function_does_not_take_is_refused(telecom_bad_assertion, tmp_path):
    folder, task_id, func = telecom_bad_assertion
    needle = f"task {task_id}: evaluation_criteria.env_assertions[0]: user-side assertion {func!r}: argument"
    for args in (
        ["tasks", "lint", "--domain", str(folder), "--strict"],
        ["tasks", "import-tau2", "--domain", str(folder), "--out", str(tmp_path / "t.jsonl")],
    ):
        out = _one_line(runner.invoke(app, args))
        assert needle in out and "'no_such_arg' is not a parameter" in out


def test_validation_and_grading_call_it_the_tasks_error(telecom_bad_assertion, tmp_path):
    from pipeline.dataset import AssertionArgumentError, EnvAssertion, read_tasks, write_tasks
    from pipeline.grading import grade
    from pipeline.grading.validate import task_problems
    from pipeline.rollout import Trajectory
    from pipeline.world import load_world

    folder, task_id, func = telecom_bad_assertion
    good = folder.parent / "good"
    shutil.copytree(folder, good)
    (good / "tasks.json").write_text(json.dumps([json.loads((folder / "tasks.json").read_text())[1]]))
    assert runner.invoke(app, ["tasks", "import-tau2", "--domain", str(good), "--out", str(tmp_path / "t.jsonl")])
    world = load_world(str(good))
    task = read_tasks(tmp_path / "t.jsonl")[0]
    bad = EnvAssertion(env_type="user", func_name=func, arguments={"no_such_arg": 1})
    task = task.model_copy(update={"evaluation": task.evaluation.model_copy(update={"env_assertions": [bad]})})
    problems = task_problems(world, [task])
    assert any("field evaluation.env_assertions.0" in p and "'no_such_arg'" in p for p in problems), problems
    write_tasks(tmp_path / "bad.jsonl", [task])
    out = _one_line(runner.invoke(app, ["tasks", "validate", str(tmp_path / "bad.jsonl"), "--world", str(good)]))
    assert "no_such_arg" in out
    nothing = Trajectory(
        task_id=task.id, agent="oracle", user="u", world=world.name, domain="telecom", termination="user_stop"
    )
    with pytest.raises(AssertionArgumentError, match=re.escape(f"task {task.id!r}: env assertion user-side")):
        grade(world, task, nothing)  # never a failed trial of the agent


def test_simulations_without_messages_are_refused(tmp_path, tau2_dir):
    data = json.loads((DATA / "tau2_results_retail.json").read_text())
    for sim in data["simulations"]:
        sim.pop("messages")
    (src := tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(Tau2ImportError, match=r"simulations\[0\].messages: no messages .*8 of 8"):
        import_run(src, tau2_dir, tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("edit", ["orphan", "price"])
def test_a_database_breaking_its_data_model_is_refused_at_import(tmp_path, tau2_dir, edit):
    folder = tmp_path / "retail"
    shutil.copytree(tau2_dir, folder)
    db = json.loads((folder / "db.json").read_text())
    order_id, order = next(iter(db["orders"].items()))
    if edit == "orphan":
        order["user_id"] = "nobody_1"
        needle = f"table orders, record {order_id!r}: field user_id: owner 'nobody_1' is no record of the world"
    else:
        order["items"][0]["price"] = -1.5
        needle = f"table orders, record {order_id!r}: field items.0.price: negative price -1.5"
    (folder / "db.json").write_text(json.dumps(db))
    out = _one_line(runner.invoke(app, ["tasks", "import-tau2", "--domain", str(folder), "--out", str(tmp_path / "t")]))
    assert needle in out


def test_an_imported_run_exports_with_the_model_its_file_names(tmp_path, tau2_dir):
    run = tmp_path / "run"
    record = import_run(DATA / "tau2_results_retail.json", tau2_dir, run)
    assert record["agent_model"] == "gold-agent" and record["world_digest"] and record["domain_name"] == "retail"
    args = ["export", "tau2-submission", "--run", str(run), "--out", str(tmp_path / "s.json")]
    result = runner.invoke(app, [*args, "--model-organization", "L", "--submitting-organization", "L"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "s.json").read_text())["model_name"] == "gold-agent"
