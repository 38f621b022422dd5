"""The `agentloop` command: each subcommand end to end on small inputs, and clear errors."""

import json

from typer.testing import CliRunner

from pipeline.cli import app

runner = CliRunner()


def test_world_replay(tau2_dir, tmp_path):
    out = tmp_path / "replay.jsonl"
    result = runner.invoke(app, ["world", "replay", "--domain", str(tau2_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 114
    assert set(lines[0]) == {"task_id", "changed", "failed_actions"}
    assert set(lines[0]["changed"]) == {"orders", "users", "products"}


def test_world_replay_missing_domain(tmp_path):
    result = runner.invoke(app, ["world", "replay", "--domain", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "nope" in result.output


def test_world_generate(tmp_path):
    out = tmp_path / "w"
    result = runner.invoke(
        app,
        ["world", "generate", "--seed", "5", "--products", "8", "--users", "20", "--orders", "30", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    db = json.loads((out / "db.json").read_text())
    assert (len(db["products"]), len(db["users"]), len(db["orders"])) == (8, 20, 30)
    assert (out / "policy.md").read_text().startswith("#")


def test_world_generate_airline_and_a_size_the_generator_does_not_know(tmp_path):
    out = tmp_path / "gen-3"
    args = ["world", "generate", "--domain", "airline", "--seed", "3", "--flights", "12", "--users", "9"]
    result = runner.invoke(app, [*args, "--reservations", "20", "--out", str(out)])
    assert result.exit_code == 0, result.output
    db = json.loads((out / "db.json").read_text())
    assert (len(db["flights"]), len(db["users"]), len(db["reservations"])) == (12, 9, 20)
    result = runner.invoke(
        app, ["world", "generate", "--domain", "airline", "--orders", "5", "--out", str(tmp_path / "w")]
    )
    assert result.exit_code == 2
    assert "unknown size(s) ['n_orders']" in result.output
    assert not (tmp_path / "w").exists()


def test_tasks_validate_reports_line_and_field(tmp_path):
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"id": "x", "world": "gen-0", "user_script": {"goal": "g"}, "provenance": {"source": "nope"}}\n')
    result = runner.invoke(app, ["tasks", "validate", str(bad)])
    assert result.exit_code == 2
    assert "tasks.jsonl:1: field provenance.source" in result.output
