"""Telecom replays τ²-bench telecom's tasks: set-up on both sides, then each gold action by its own side, with the
synchronisation after every call; every env assertion of the 114 base tasks holds at the end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.tau2.replay import write_replay
from pipeline.world.registry import load_world


@pytest.fixture(scope="module")
def telecom_dir() -> Path:
    from tests.needs import need_tau2

    return need_tau2("telecom")


@pytest.fixture(scope="module")
def replayed(telecom_dir, tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("telecom") / "replay.jsonl"
    result = CliRunner().invoke(app, ["world", "replay", "--domain", str(telecom_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    return {line["task_id"]: line for line in lines}


def test_all_114_base_tasks_meet_every_assertion_with_no_failed_action(replayed):
    assert len(replayed) == 114
    assert [t for t, line in replayed.items() if line["failed_actions"]] == []
    unmet = [(t, a["func_name"]) for t, line in replayed.items() for a in line["assertions"] if not a["met"]]
    assert unmet == []
    assert sum(len(line["assertions"]) for line in replayed.values()) == 209


def test_lines_lay_out_both_sides_as_the_files_do(replayed, telecom_dir):
    user_db = json.loads((telecom_dir / "user_db.json").read_text())
    for line in replayed.values():
        assert list(line["changed"]) == ["plans", "customers", "lines", "bills", "devices"]
        assert list(line["user_state"]) == ["device", "surroundings"]
        assert set(line["user_state"]["device"]) == set(user_db["device"])
        assert set(line["user_state"]["surroundings"]) == set(user_db["surroundings"])


def test_refuelling_and_the_phone_back_online(replayed):
    line = replayed["[mobile_data_issue]data_mode_off|data_usage_exceeded[PERSONA:None]"]
    assert line["changed"]["lines"]["L1002"]["data_refueling_gb"] == 2.0
    assert line["changed"]["lines"]["L1002"]["data_used_gb"] == 15.1  # the set-up's usage, on the carrier side
    assert line["changed"]["bills"]["B1003"]["line_items"][-1] == {
        "description": "Data refueling: 2.0 GB at $2.0/GB",
        "amount": 4.0,
        "date": "2025-02-25",
        "item_type": "Charge",
    }
    phone, where = line["user_state"]["device"], line["user_state"]["surroundings"]
    assert phone["data_enabled"] and phone["network_technology_connected"] == "5G"
    assert where["phone_number"] == "555-123-2002" and not where["mobile_data_usage_exceeded"]


def test_overdue_bill_paid_on_the_phone_lands_on_the_carrier_side(replayed):
    overdue = [t for t, line in replayed.items() if "B1234321" in line["changed"]["bills"]]
    assert overdue
    for task_id in overdue:
        line = replayed[task_id]
        bill = line["changed"]["bills"]["B1234321"]
        if any(a["func_name"] == "assert_no_overdue_bill" for a in line["assertions"]):
            assert bill["status"] == "Paid" and line["user_state"]["surroundings"]["payment_request"] is None
            assert "L1002" not in line["changed"]["lines"]  # resumed: back as db.json has it
            assert line["user_state"]["device"]["network_connection_status"] == "connected"
        else:  # a "cannot fix, transfer" task: the contract has ended, the line stays suspended
            assert bill["status"] == "Overdue"
            assert line["user_state"]["device"]["network_connection_status"] == "no_service"


def test_directory_is_recognised_as_telecom(telecom_dir):
    world = load_world(str(telecom_dir))
    assert world.domain.name == "telecom"
    assert world.table_names == ("plans", "customers", "lines", "bills", "devices", "device", "surroundings")
    assert len(world.tools.tools) == 13 and len(world.user_tools.tools) == 30


def test_a_bad_user_db_is_named(telecom_dir, tmp_path):
    for name in ("db.json", "policy.md", "tasks.json"):
        (tmp_path / name).write_text((telecom_dir / name).read_text())
    user_db = json.loads((telecom_dir / "user_db.json").read_text())
    user_db["device"]["network_mode_preference"] = "6g"
    (tmp_path / "user_db.json").write_text(json.dumps(user_db))
    with pytest.raises(ValueError, match=r"user_db.json: field device.network_mode_preference"):
        write_replay(tmp_path, tmp_path / "out.jsonl", domain="telecom")


def test_import_tau2_keeps_set_up_assertions_and_each_action_s_side(telecom_dir, tmp_path):
    from pipeline.dataset.io import read_tasks

    out = tmp_path / "tasks.jsonl"
    args = ["tasks", "import-tau2", "--domain", str(telecom_dir), "--split", "test", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    tasks = read_tasks(out)
    assert len(tasks) == 40
    assert all(t.customer_user_id == "C1001" and t.user_script.known.phone == "555-123-2002" for t in tasks)
    assert all(t.evaluation.env_assertions and t.initial_state["initialization_actions"] for t in tasks)
    sides = {a.requestor for t in tasks for a in t.gold_actions}
    assert sides == {"user", "assistant"}
    assert {tuple(t.evaluation.reward_basis) for t in tasks} <= {("ENV_ASSERTION",), ("ENV_ASSERTION", "ACTION")}


def test_task_validation_knows_each_side_s_tools(telecom_dir):
    from pipeline.dataset.task import Action
    from pipeline.domains.telecom.domain import TELECOM
    from pipeline.grading.validate import task_problems

    world, tasks = TELECOM.tau2_importer().load(telecom_dir)
    assert task_problems(world, tasks) == []
    task = next(t for t in tasks if any(a.requestor == "user" for a in t.gold_actions))
    wrong = task.model_copy(update={"gold_actions": [Action(name="refuel_data", requestor="user")]})
    assert task_problems(world, [wrong]) == [
        f"task {task.id!r}: field gold_actions.0.name: unknown tool 'refuel_data' of the customer's"
    ]
