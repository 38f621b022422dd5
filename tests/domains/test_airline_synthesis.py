"""Airline's synthesis kit: it fits the airline tools, each template grounds a task the oracle solves on τ²-bench's
airline database, each refusal's write is refused by the world, and `agentloop synthesize --domain airline`
grows verified tasks in a generated airline world from a measured flawed agent's targets."""

from __future__ import annotations

import hashlib
import json

import pytest
from typer.testing import CliRunner

from pipeline.authoring.kit import check_kit, kit_of
from pipeline.cli import app
from pipeline.dataset.io import read_tasks
from pipeline.dataset.replay import replay_actions
from pipeline.domains.airline.synthesis import AIRLINE_KIT, TAXONOMY
from pipeline.domains.airline.templates import TEMPLATES
from pipeline.synth.candidate import Spec, build
from pipeline.synth.synthesize import EvalWorldError, Synthesizer
from pipeline.synth.verify import Verifier
from pipeline.target import Targets, split_budget
from pipeline.world.registry import load_world, resolve_domain
from pipeline.world.tools import execute

AIRLINE = resolve_domain("airline")
runner = CliRunner()


@pytest.fixture(scope="module")
def tau2(tau2_airline_dir):
    return load_world(str(tau2_airline_dir), "airline")


def _candidates(world, name: str, **spec):
    kit = kit_of(world.domain, "tests")
    ctx = kit.ground(world)
    return build(kit, ctx, Spec(parts=(name,), mode=TAXONOMY[name].modes[0], **spec), f"t-{name}", 0)


def test_the_kit_fits_the_airline_tools():
    check_kit(AIRLINE, AIRLINE_KIT)
    assert kit_of(AIRLINE, "tests") is AIRLINE_KIT
    assert list(TAXONOMY) == list(TEMPLATES)
    done = {s.tool for s in TAXONOMY.values() if s.outcome == "done"}
    assert done == set(AIRLINE.tools.of_kind("write"))
    refused = {n for n, s in TAXONOMY.items() if s.outcome == "refused"}
    assert refused == {"cancel_not_allowed", "basic_economy_change", "remove_bag", "add_passenger"}
    assert all(TAXONOMY.twin(n) for n in refused)  # each refusal has the same write where the policy allows it


@pytest.mark.parametrize("name", list(TAXONOMY))
def test_each_template_yields_a_verified_task_on_the_tau2_db(tau2, name):
    cand = _candidates(tau2, name)
    assert cand.task is not None, name
    v = Verifier(tau2)(cand)
    assert v.ok, (name, v.kind, v.details)
    ids = {r.reservation_id for r in tau2.query("reservations")}
    records = [d.request.record_id for d in cand.drafts if d.request.record_id]
    assert all(r in ids for r in records)  # grounded in the world's own reservations


@pytest.mark.parametrize("name", [n for n, s in TAXONOMY.items() if s.outcome == "refused"])
def test_each_refusal_is_refused_by_the_world(tau2, name):
    cand = _candidates(tau2, name)
    (d,) = cand.drafts
    assert d.write is None and d.forbidden is not None and cand.task.user_script.requests[0].expect == "refused"
    session = replay_actions(tau2, cand.task.gold_actions)
    event = execute(session, d.forbidden.name, d.forbidden.arguments)
    assert not event.ok, (name, d.forbidden)


def test_an_underspecified_request_makes_the_oracle_ask_which_reservation(tau2):
    cand = _candidates(tau2, "update_baggages", dials=("underspecified",))
    req = cand.task.user_script.requests[0]
    assert req.record_id not in req.utterance and "one of my reservations" in req.utterance
    v = Verifier(tau2)(cand)
    assert v.ok, v.details
    said = [m.content for m in v.trajectory.messages if m.role == "assistant" and m.content]
    assert any("Which reservation" in s for s in said)


def test_the_generator_is_seeded_and_synthesis_refuses_the_evaluation_world(tmp_path):
    one, two = AIRLINE.load("gen-4-30x40x120"), AIRLINE.load("gen-4-30x40x120")
    assert one.to_dict() == two.to_dict() and one.name == "gen-4-30x40x120"
    assert [len(one.table(t)) for t in ("flights", "users", "reservations")] == [30, 40, 120]
    assert one.to_dict() != AIRLINE.load("gen-5-30x40x120").to_dict()
    owned = {r for u in one.query("users") for r in u.reservations}
    assert owned == {r.reservation_id for r in one.query("reservations")}
    renamed = AIRLINE.from_dict(one.to_dict(), one.policy, "tau2_airline")
    with pytest.raises(EvalWorldError):
        Synthesizer(renamed, Targets(budget=1, modes=split_budget({"invention": 0.5}, 1)))


def test_synthesize_on_airline_end_to_end(tau2_airline_dir, tmp_path):
    """Held-out tasks on τ²'s database, a flawed agent measured on them, targets, then synthesis in a fresh world."""
    tasks, run, targets, out = tmp_path / "tasks.jsonl", tmp_path / "run", tmp_path / "targets.json", tmp_path / "syn"
    steps = [
        ["tasks", "generate", "--world", str(tau2_airline_dir), "--n", "24", "--out", str(tasks)],
        ["measure", "--world", str(tau2_airline_dir), "--tasks", str(tasks), "--agent", "flawed", "--trials", "2"]
        + ["--out", str(run)],
        ["target", "--metrics", str(run / "metrics.json"), "--budget", "24", "--out", str(targets)]
        + ["--verdicts", str(run / "verdicts.jsonl"), "--tasks", str(tasks)],
        ["synthesize", "--world", "gen-2-60x80x300", "--domain", "airline", "--targets", str(targets)]
        + ["--out", str(out), "--generations", "3"],
    ]
    for args in steps:
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args[0], result.output)
    made = read_tasks(out / "tasks.jsonl")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tasks"] == len(made) >= 20 and {t.world for t in made} == {"gen-2-60x80x300"}
    assert set(TAXONOMY) <= set(manifest["counts"]["by_template"])  # generation 0 made every atomic action
    assert manifest["counts"]["by_outcome"].get("refused", 0) >= 4
    assert sum(1 for _ in (out / "trajectories.jsonl").open()) == len(made)  # each with the oracle's passing run
    world = load_world("gen-2-60x80x300", "airline")
    for t in made:
        assert all(e.ok for e in replay_actions(world, t.gold_actions).log), t.id


def test_the_held_out_tasks_are_those_made_before_the_kit_shared_their_templates(tau2):
    """The `tasks` capability's output, pinned: the kit shares its templates and grounding without changing it."""
    tasks = AIRLINE.require("tasks")(tau2, 44, seed=0)
    text = "".join(t.model_dump_json() + "\n" for t in tasks)
    assert hashlib.sha256(text.encode()).hexdigest() == (
        "8e2b27ecc23c864627df175ba68720b72b12d72869d3928c1ff012bce127107d"
    )
