"""`tasks generate --n N` on a world that yields fewer tasks: refused in one line saying how many it yields, or
written when --allow-fewer says fewer will do."""

from __future__ import annotations

from typer.testing import CliRunner

from pipeline.cli import app
from tests.needs import need_tau2


def test_fewer_tasks_than_asked_are_refused_unless_allowed(tmp_path):
    world = str(need_tau2("telecom"))
    args = ["tasks", "generate", "--world", world, "--n", "500", "--out", str(tmp_path / "t.jsonl")]
    refused = CliRunner().invoke(app, args)
    text = " ".join(refused.output.split())
    assert refused.exit_code == 2 and "--n 500: world 'tau2_telecom' yields only" in text, text
    assert "--allow-fewer" in text and not (tmp_path / "t.jsonl").exists()
    made = int(text.split("yields only ")[1].split()[0])
    assert 0 < made < 500
    allowed = CliRunner().invoke(app, [*args, "--allow-fewer"])
    assert allowed.exit_code == 0, allowed.output
    assert len((tmp_path / "t.jsonl").read_text().splitlines()) == made


def test_a_small_world_that_repeats_its_tasks_counts_each_once(tmp_path):
    """A generator cycling through a small world's few customers returns --n tasks, many of them the same task
    under another id: only distinct tasks count, so the repeats neither fill the file nor pass for its size."""
    from pipeline.dataset import read_tasks

    out = tmp_path / "t.jsonl"
    args = ["tasks", "generate", "--world", "gen-3-5x3x4", "--n", "500", "--out", str(out)]
    refused = CliRunner().invoke(app, args)
    text = " ".join(refused.output.split())
    assert refused.exit_code == 2 and "distinct tasks" in text and not out.exists(), text
    made = int(text.split("yields only ")[1].split()[0])
    assert CliRunner().invoke(app, [*args, "--allow-fewer"]).exit_code == 0
    tasks = read_tasks(out)
    assert len(tasks) == made < 500
    assert len({t.model_dump_json(exclude={"id"}) for t in tasks}) == made
