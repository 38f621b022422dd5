"""The top-up of a generic draw: every refusal group the explorer found asked for at the task count asked for,
each aimed task verified by its gold replay and replacing a task whose loss uncovers nothing; a group that
cannot be reproduced is reported with why."""

from __future__ import annotations

import pytest

from pipeline.authoring.kit import template_kit_of
from pipeline.authoring.templates import generate
from pipeline.authoring.topup import TOP_UP
from pipeline.dataset.replay import replay_gold
from pipeline.explore.coverage import coverage
from pipeline.explore.kit import pattern_regex
from pipeline.explore.model import RefusalGroup
from pipeline.explore.probe import Explorer, world_model
from pipeline.world.registry import load_world

LIBRARY = "tests.domains.library.domain:LIBRARY"
STUDIO = "tests.domains.toy.domain:TOY+generic"


def test_each_refusal_group_records_refused_calls_that_refuse_again():
    world = load_world("library", LIBRARY)
    model, ex = world_model(world), Explorer(world, seed=0)
    groups = [(w, g) for w, m in model.writes.items() for g in m.refusals]
    assert groups and all(g.recipes for _, g in groups)
    for tool, g in groups:
        for r in g.recipes:
            call = ex.call(tool, r.user, r.arguments)
            assert not call.ok and pattern_regex(g.pattern).match(call.error or ""), (tool, g.name, call.error)


@pytest.mark.parametrize(("spec", "ref", "n"), [(LIBRARY, "library", 20), (LIBRARY, "library", 24)])
def test_a_short_draw_is_topped_up_to_every_group_with_the_count_kept(spec, ref, n):
    world = load_world(ref, spec)
    model = world_model(world)
    plain = generate(world, n, seed=0, templates=["*", "two_requests"])  # a cycle named: no top-up
    assert not plain.replaced and not plain.unreproduced
    before = coverage(model, plain.tasks)
    result = generate(world, n, seed=0)
    after = coverage(model, result.tasks, result.unreproduced)
    assert len(result.tasks) == n  # the top-up replaces, it does not add
    total = after["refusals_covered"].split("/")[1]
    assert after["refusals_covered"] == f"{total}/{total}" and not after["unreproduced"]
    assert after["writes_covered"] == before["writes_covered"]
    topped = [t for t in result.tasks if TOP_UP in t.provenance.dials]
    assert len(topped) == len(result.replaced) == len(after["top_up"])
    assert len({t.id for t in result.tasks}) == n
    for t in topped:  # a refused request whose gold replays, and whose refusal is the group aimed at
        assert all(e.ok for e in replay_gold(world, t).log)
        assert [r.expect for r in t.user_script.requests] == ["refused"]


def test_the_default_draw_of_the_studio_needs_no_top_up():
    world = load_world("gen-0", STUDIO)
    result = generate(world, 36, seed=0)
    assert not result.replaced and not result.unreproduced


def test_a_group_no_call_reproduces_is_reported_with_why(monkeypatch):
    world = load_world("library", LIBRARY)
    model = world_model(world).model_copy(deep=True)
    tool = next(iter(model.writes))
    ghost = RefusalGroup(name="precondition_99", category="precondition", pattern="never said <value>", calls=1,
                         example="never said 7")  # fmt: skip
    model.writes[tool].refusals.append(ghost)
    monkeypatch.setattr("pipeline.explore.kit.world_model", lambda w, seed=0: model)
    result = generate(world, 40, seed=0)
    why = result.unreproduced[f"{tool}:precondition_99"]
    assert "no refused call of it was recorded" in why and "aimed search" in why
    cov = coverage(model, result.tasks, result.unreproduced)
    assert cov["unreproduced"] == result.unreproduced
    assert len(result.tasks) == 40


def test_a_hand_written_kit_has_no_gaps_to_aim_at():
    world = load_world("gen-0", "tests.domains.toy.domain:TOY")
    kit = template_kit_of(world.domain, needed_for="test")
    assert kit.gaps(kit.ground(world), []) == [] and list(kit.aimed(kit.ground(world), "x", None)) == []


def test_without_recorded_calls_an_aimed_search_fills_the_gaps(monkeypatch):
    world = load_world("library", LIBRARY)
    model = world_model(world).model_copy(deep=True)
    for w in model.writes.values():
        for g in w.refusals:
            g.recipes = []  # a world model read from a file written before calls were recorded
    monkeypatch.setattr("pipeline.explore.kit.world_model", lambda w, seed=0: model)
    result = generate(world, 20, seed=0)
    assert result.replaced and not result.unreproduced
    assert coverage(model, result.tasks)["refusals_covered"] == "8/8"


def test_the_top_up_replaces_at_most_its_share_of_the_draw():
    world = load_world("library", LIBRARY)
    result = generate(world, 11, seed=0)  # two groups missing; 10% of 11 tasks is one
    assert len(result.replaced) == 1 and len(result.tasks) == 11
    assert list(result.unreproduced.values()) == ["no share left: a top-up replaces at most 1 of 11 tasks"]


@pytest.mark.slow
def test_airline_generic_tasks_ask_for_every_refusal_group(tau2_airline_dir):
    """Airline with its kit switched off: at the default 120 tasks every write tool and every refusal group the
    explorer found is covered, the rare ones by top-up tasks whose gold replays (about 20 s)."""
    world = load_world(str(tau2_airline_dir), "airline+generic")
    result = generate(world, 120, seed=0)
    cov = coverage(world_model(world), result.tasks, result.unreproduced)
    total = cov["refusals_covered"].split("/")[1]
    assert cov["refusals_covered"] == f"{total}/{total}" and cov["writes_covered"] == "6/6"
    assert len(result.tasks) == 120 and not result.unreproduced and cov["top_up"]
    for t in result.tasks:
        if TOP_UP in t.provenance.dials:
            assert all(e.ok for e in replay_gold(world, t).log)
