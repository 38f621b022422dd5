"""`agentloop measure --agent program:...` end to end: the oracle as a program over MCP writes the verdicts the
in-process oracle writes (generated retail tasks, and τ²-bench retail's 114 tasks as `agentloop tasks import-tau2`
gives them), and a crashing program's trials are failures, not exclusions."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from pipeline.cli import app

runner = CliRunner()
ORACLE = "program:pipeline.programs.scripted:OracleProgram"


def invoke(*args: str) -> None:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output


def verdicts(run: Path) -> dict[tuple[str, int], dict]:
    out = {}
    for line in (run / "verdicts.jsonl").read_text().splitlines():
        record = json.loads(line)
        out[(record["verdict"]["task_id"], record["verdict"]["trial"])] = record
    return out


def measure_both(tmp_path: Path, world: str, tasks: Path, *extra: str) -> tuple[dict, dict]:
    common = ["measure", "--world", world, "--tasks", str(tasks), "--trials", "2", *extra]
    invoke(*common, "--out", str(tmp_path / "oracle"))
    invoke(*common, "--agent", ORACLE, "--out", str(tmp_path / "program"))
    return verdicts(tmp_path / "oracle"), verdicts(tmp_path / "program")


def test_measure_runs_the_oracle_as_a_program_with_the_oracles_verdicts(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    invoke("tasks", "generate", "--world", "gen-2", "--n", "6", "--out", str(tasks))
    direct, program = measure_both(tmp_path, "gen-2", tasks)
    assert len(direct) == 12 and program == direct
    assert all(r["verdict"]["passed"] for r in program.values())
    line = json.loads((tmp_path / "program" / "trajectories.jsonl").read_text().splitlines()[0])
    trajectory = line.get("trajectory", line)
    assert trajectory["agent"] == ORACLE and trajectory["tool_loop"] == "agent"


def test_measure_counts_a_crashing_program_as_failing(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    invoke("tasks", "generate", "--world", "gen-2", "--n", "2", "--out", str(tasks))
    out = tmp_path / "crash"
    invoke(
        "measure", "--world", "gen-2", "--tasks", str(tasks), "--trials", "1",
        "--agent", "program:tests.programs.programs:Crashing", "--out", str(out),
    )  # fmt: skip
    records = verdicts(out)
    assert all(not r["verdict"]["passed"] and not r["verdict"]["infra_error"] for r in records.values())
    assert all("program" in [c["name"] for c in r["verdict"]["components"]] for r in records.values())
    assert (out / "metrics.json").is_file()


def test_measure_on_tau2_retail_gives_the_oracles_verdicts_as_a_program(tmp_path, tau2_dir):
    tasks = tmp_path / "tau2_tasks.jsonl"
    invoke("tasks", "import-tau2", "--domain", str(tau2_dir), "--out", str(tasks))
    direct, program = measure_both(tmp_path, str(tau2_dir), tasks)
    assert len(direct) == 2 * 114 and program == direct
    # the scripted customer ends a τ²-bench task at once (no scripted requests): tests/programs/test_tau2.py plays
    # the tasks' gold conversations in process and as a program, and compares those


def test_measure_runs_a_program_on_an_environment_behind_the_six_functions(tmp_path):
    """An environment of its own (examples.library), its generic oracle as a program: the in-process verdicts."""
    tasks = tmp_path / "tasks.jsonl"
    domain = ["--domain", "examples.library:Library"]
    invoke("tasks", "generate", *domain, "--world", "library-0", "--n", "4", "--out", str(tasks))
    direct, program = measure_both(tmp_path, "library-0", tasks, *domain)
    assert len(direct) == 8 and program == direct
    assert all(r["verdict"]["passed"] for r in program.values())
