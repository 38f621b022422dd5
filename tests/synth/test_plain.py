"""`agentloop tasks generate --template T --plain`: one family, no messes, the same tasks for the same seed."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from pipeline.authoring.templates import generate_tasks
from pipeline.cli import app
from pipeline.synth.plain import generate_selected, is_plain
from pipeline.world.registry import load_world

WORLD = "gen-5-8x30x60"


def test_plain_cancel_tasks_have_no_messes_and_are_a_prefix_stable_choice():
    world = load_world(WORLD)
    some = generate_tasks(world, 12, seed=0, templates=["cancel"])
    assert any(not is_plain(t) for t in some), "the plain filter must have something to drop here"
    chosen = generate_selected(generate_tasks, world, 4, seed=0, templates=["cancel"], plain=True)
    assert len(chosen) == 4
    assert all(is_plain(t) and t.provenance.template == "cancel" for t in chosen)
    more = generate_selected(generate_tasks, world, 6, seed=0, templates=["cancel"], plain=True)
    assert [t.id for t in more[:4]] == [t.id for t in chosen]


def test_generate_cli_template_and_plain(tmp_path):
    out = tmp_path / "tasks.jsonl"
    args = ["tasks", "generate", "--world", WORLD, "--n", "3", "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--template", "cancel", "--plain"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.open()]
    assert len(rows) == 3 and {r["provenance"]["template"] for r in rows} == {"cancel"}
    assert not any(v for r in rows for v in r["provenance"]["dials"].values() if isinstance(v, bool))

    bad = CliRunner().invoke(app, [*args[:-1], str(tmp_path / "bad.jsonl"), "--template", "cancle"])
    assert bad.exit_code != 0 and "cancle" in bad.output
