"""`agentloop tasks lint`: each class of finding on small crafted task files (a copy of τ²-bench telecom's first
base task, broken one way at a time), a clean task with none, and the command on all three real domains."""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.tau2.lint import CLASSES, lint_directory
from tests.needs import need_tau2

POLICY = """# Telecom agent policy (crafted)

Find the customer with get_customer_by_phone, check usage with get_data_usage, then refuel_data.
To give money back, call refund_everything. Ask the customer to run toggle_airplane_mode on their phone.
"""


@pytest.fixture(scope="module")
def base_task():
    src = need_tau2("telecom")
    return json.loads((src / "tasks.json").read_text())[0], src


def _domain(tmp_path, src, tasks: list[dict], policy: str = POLICY):
    d = tmp_path / "telecom"
    d.mkdir()
    for name in ("db.json", "user_db.json"):
        (d / name).symlink_to(src / name)
    (d / "policy.md").write_text(policy)
    (d / "tasks.json").write_text(json.dumps(tasks))
    return d


def _variant(base: dict, task_id: str, edit) -> dict:
    t = copy.deepcopy(base)
    t["id"] = task_id
    edit(t)
    return t


def _refuel(t: dict) -> dict:
    return next(a for a in t["evaluation_criteria"]["actions"] if a["name"] == "refuel_data")


def _bad_line(t):
    _refuel(t)["arguments"]["line_id"] = "L9999"


def _nothing_to_do(t):
    t["evaluation_criteria"]["actions"] = []
    t["evaluation_criteria"]["env_assertions"] = [
        {"env_type": "user", "func_name": "assert_airplane_mode_status", "arguments": {"expected_status": False}}
    ]


def _unstated_amount(t):
    _refuel(t)["arguments"]["gb_amount"] = 1.5
    for a in t["evaluation_criteria"]["env_assertions"]:
        if a["func_name"] == "assert_data_refueling_amount":
            a["arguments"]["expected_amount"] = 1.5


def test_each_class_is_found_where_it_was_planted_and_nowhere_else(tmp_path, base_task):
    base, src = base_task
    tasks = [
        _variant(base, "clean", lambda t: None),
        _variant(base, "bad_line", _bad_line),
        _variant(base, "nothing_to_do", _nothing_to_do),
        _variant(base, "unstated_amount", _unstated_amount),
    ]
    report, findings = lint_directory(_domain(tmp_path, src, tasks))
    by_task = {(f.task_id, f.kind) for f in findings}
    assert by_task == {
        ("bad_line", "gold_fails"),
        ("nothing_to_do", "passes_empty"),
        ("unstated_amount", "underspecified_count"),
        (None, "policy_tool"),
    }, findings
    assert [f.detail for f in findings if f.kind == "policy_tool"] == [
        "the policy names refund_everything (1x); the agent has no such tool"
    ]
    assert "refuel_data refused" in next(f.detail for f in findings if f.kind == "gold_fails")
    assert "gb_amount=1.5" in next(f.detail for f in findings if f.kind == "underspecified_count")
    assert report["customer_tools_named"] == 1 and report["agent_tools_named"] == 3
    assert {c: report["classes"][c]["tasks"] for c in CLASSES} == {
        "gold_fails": 1,
        "passes_empty": 1,
        "underspecified_count": 1,
        "policy_tool": 0,
    }


def test_the_command_writes_every_finding_and_strict_fails_on_them(tmp_path, base_task):
    base, src = base_task
    d = _domain(tmp_path, src, [_variant(base, "bad_line", _bad_line)])
    out = tmp_path / "lint.json"
    result = CliRunner().invoke(app, ["tasks", "lint", "--domain", str(d), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "gold_fails" in result.output and "bad_line: refuel_data refused" in result.output
    written = json.loads(out.read_text())
    assert written["tasks"] == 1 and {f["kind"] for f in written["findings"]} == {"gold_fails", "policy_tool"}
    strict = CliRunner().invoke(app, ["tasks", "lint", "--domain", str(d), "--strict"])
    assert strict.exit_code == 1
    (tmp_path / "c").mkdir()
    clean = _domain(tmp_path / "c", src, [base], policy="Use get_customer_by_phone.\n")
    assert CliRunner().invoke(app, ["tasks", "lint", "--domain", str(clean), "--strict"]).exit_code == 0


def test_a_directory_without_tasks_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["tasks", "lint", "--domain", str(tmp_path)])
    assert result.exit_code == 2 and "error" in result.output


@pytest.mark.parametrize("name", ["retail", "airline", "telecom"])
def test_the_real_domains_lint_with_no_unknown_policy_tool(name):
    report, findings = lint_directory(need_tau2(name))
    assert report["tasks"] in (50, 114) and report["classes"]["policy_tool"]["findings"] == 0
    assert report["agent_tools_named"] >= 1  # every policy names at least the transfer tool
    if name == "telecom":  # every base task's gold replays and needs work to pass (see world replay)
        assert not [f for f in findings if f.kind in ("gold_fails", "passes_empty")]
