"""Tasks checked against their world: each case the schema accepts but no run can score fairly is refused."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from pipeline.authoring.templates import generate_tasks
from pipeline.cli import app
from pipeline.dataset.io import write_tasks
from pipeline.dataset.task import Action, OrderStatusCheck, ToolNotCalledCheck
from pipeline.grading.validate import TaskValidationError, check_tasks, task_problems
from pipeline.world.registry import load_world

WORLD = "gen-3-8x20x40"
runner = CliRunner()


@pytest.fixture(scope="module")
def world():
    return load_world(WORLD)


@pytest.fixture
def tasks(world):
    return generate_tasks(world, 6, seed=2)


def test_generated_tasks_are_valid(world, tasks):
    assert task_problems(world, tasks) == []
    check_tasks(world, tasks)


def test_a_gold_action_naming_an_unknown_tool(world, tasks):
    tasks[0].gold_actions.append(Action(name="refund_everything", arguments={}))
    last = len(tasks[0].gold_actions) - 1
    assert task_problems(world, tasks) == [
        f"task {tasks[0].id!r}: field gold_actions.{last}.name: unknown tool 'refund_everything'"
    ]


def test_a_gold_write_naming_a_missing_record(world, tasks):
    task = tasks[0]
    task.gold_actions.append(
        Action(name="cancel_pending_order", arguments={"order_id": "#W0000000", "reason": "no longer needed"})
    )
    (problem,) = task_problems(world, [task])
    assert "cancel_pending_order is refused (not_found)" in problem and "#W0000000" in problem


def test_a_gold_write_after_the_gold_transfer(world, tasks):
    task = next(t for t in tasks if any(a.name in world.tools.of_kind("write") for a in t.gold_actions))
    task.gold_actions.insert(0, Action(name="transfer_to_human_agents", arguments={"summary": "x"}))
    problems = task_problems(world, [task])
    assert problems and all("refused (transferred)" in p for p in problems)


def test_a_gold_action_with_bad_arguments(world, tasks):
    tasks[1].gold_actions.append(Action(name="get_order_details", arguments={"order": "#W1"}))
    (problem,) = task_problems(world, tasks)
    assert "get_order_details is refused (invalid_arguments)" in problem


def test_an_impossible_check_status_and_an_unknown_tool_check(world, tasks):
    order_id = next(iter(world.table("orders")))
    tasks[0].checks += [OrderStatusCheck(order_id=order_id, status="teleported"), ToolNotCalledCheck(tool="nope")]
    problems = task_problems(world, tasks)
    assert any("impossible status 'teleported'" in p and "'cancelled'" in p for p in problems)
    assert any("unknown tool 'nope'" in p for p in problems)
    tasks[0].checks[-2:] = [OrderStatusCheck(order_id="#W404", status="cancelled")]
    assert any("no order '#W404'" in p for p in task_problems(world, tasks))


def test_a_task_written_for_another_world(world, tasks):
    tasks[2].world = "gen-99"
    with pytest.raises(
        TaskValidationError, match=r"task .*: field world: the task is written for world 'gen-99', not 'gen-3-8x20x40'"
    ):
        check_tasks(world, tasks, "tasks.jsonl")


def test_an_unknown_customer(world, tasks):
    tasks[0].customer_user_id = "nobody_0000"
    assert any("field customer_user_id: no record 'nobody_0000'" in p for p in task_problems(world, tasks))


def test_the_cli_checks_against_the_world(tmp_path, tasks):
    path = tmp_path / "tasks.jsonl"
    write_tasks(path, tasks)
    ok = runner.invoke(app, ["tasks", "validate", str(path)])
    assert ok.exit_code == 0 and "6 valid tasks (checked against world 'gen-3-8x20x40')" in ok.output
    tasks[3].gold_actions.append(Action(name="refund_everything"))
    write_tasks(path, tasks)
    bad = runner.invoke(app, ["tasks", "validate", str(path), "--world", WORLD])
    assert bad.exit_code == 2 and "unknown tool 'refund_everything'" in bad.output


def test_the_cli_names_a_world_that_does_not_load(tmp_path, tasks):
    for t in tasks:
        t.world = "tau2_nowhere"
    write_tasks(path := tmp_path / "tasks.jsonl", tasks)
    result = runner.invoke(app, ["tasks", "validate", str(path)])
    assert result.exit_code == 2 and "'tau2_nowhere' does not load; pass --domain" in result.output
    assert "or --world" in result.output
    named = runner.invoke(app, ["tasks", "validate", str(path), "--domain", "retail"])
    assert named.exit_code == 2 and "'tau2_nowhere' does not load; pass --world (" in named.output


def test_a_domain_from_outside_is_what_a_file_of_its_tasks_needs(tmp_path):
    """A world only its domain reads (the library): without --domain the message asks for it; with it, valid."""
    from pipeline.authoring.templates import generate_tasks
    from pipeline.world.registry import load_world

    spec = "tests.domains.library.domain:LIBRARY"
    write_tasks(path := tmp_path / "tasks.jsonl", generate_tasks(load_world("library", spec), 4))
    bare = runner.invoke(app, ["tasks", "validate", str(path)])
    assert bare.exit_code == 2 and "'library' does not load; pass --domain" in bare.output
    named = runner.invoke(app, ["tasks", "validate", str(path), "--domain", spec])
    assert named.exit_code == 0 and "4 valid tasks (checked against world 'library')" in named.output


def test_measure_refuses_invalid_tasks_before_running(tmp_path, tasks):
    from pipeline.measure import MeasureConfig, measure

    tasks[0].world = "gen-99"
    write_tasks(path := tmp_path / "tasks.jsonl", tasks)
    with pytest.raises(TaskValidationError, match="written for world 'gen-99'"):
        measure(MeasureConfig(world=WORLD, tasks=path, agent="oracle", trials=1, resamples=10), tmp_path / "run")
    assert not (tmp_path / "run" / "journal.jsonl").exists()


def test_a_check_its_own_gold_fails_makes_the_task_unsolvable(world, tasks):
    task = next(t for t in tasks if any(a.name in world.tools.of_kind("write") for a in t.gold_actions))
    written = next(a.name for a in task.gold_actions if a.name in world.tools.of_kind("write"))
    task.checks.append(ToolNotCalledCheck(tool=written))
    (problem,) = task_problems(world, [task])
    assert f"field checks.{len(task.checks) - 1}: contradicts the task's gold actions" in problem
    assert f"{written} was called 1 time(s)" in problem


def test_a_customer_who_only_knows_another_users_email(world, tasks):
    task = tasks[0]
    other = next(u for k, u in sorted(world.table("users").items()) if k != task.customer_user_id)
    known = task.user_script.known.model_copy(
        update={"email": other.email, "first_name": None, "last_name": None, "zip": None, "user_id": None}
    )
    task.user_script = task.user_script.model_copy(update={"known": known})
    problems = task_problems(world, [task])
    assert any("field user_script.known.email" in p and "no other way to be identified" in p for p in problems)
    with_zip = known.model_copy(update={"first_name": "A", "last_name": "B", "zip": "12345"})
    task.user_script = task.user_script.model_copy(update={"known": with_zip})
    assert not any("user_script" in p for p in task_problems(world, [task]))
