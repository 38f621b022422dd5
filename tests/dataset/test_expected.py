"""A task's expected outcome is its gold's: 'act' when replaying the gold changes the world (either side), 'refuse'
when it changes nothing; generic over domains (built-in, plug-in, τ²-bench's, dual control)."""

from __future__ import annotations

from pipeline.authoring.templates import generate_tasks
from pipeline.dataset import Action, expected_outcome, expected_outcomes
from pipeline.synth.manifest import outcome_of
from pipeline.world.registry import load_world

WORLD = "gen-3-12x40x100"


def test_generated_tasks_act_where_a_request_is_served_and_refuse_where_every_one_is_refused():
    world = load_world(WORLD)
    tasks = generate_tasks(world, 60, seed=0)
    expected = expected_outcomes(world, tasks)
    assert set(expected.values()) == {"act", "refuse"}
    for task in tasks:
        assert expected[task.id] == ("refuse" if outcome_of(task) == "refused" else "act"), task.id


def test_no_gold_and_gold_the_world_refuses_change_nothing():
    world = load_world(WORLD)
    task = next(t for t in generate_tasks(world, 15, seed=0) if expected_outcome(world, t) == "act")
    assert expected_outcome(world, task.model_copy(update={"gold_actions": []})) == "refuse"
    reads = [a for a in task.gold_actions if world.tools.tools[a.name].kind != "write"]
    assert expected_outcome(world, task.model_copy(update={"gold_actions": reads})) == "refuse"
    refused = [a.model_copy(update={"arguments": {**a.arguments, "order_id": "#nope"}}) for a in task.gold_actions]
    assert expected_outcome(world, task.model_copy(update={"gold_actions": refused})) == "refuse"
    assert expected_outcome(world, task.model_copy(update={"gold_actions": [*reads, *task.gold_actions]})) == "act"


def test_a_plug_in_domain_is_decided_by_its_own_gold():
    spec = "tests.domains.toy.domain:TOY"
    world = load_world("gen-101", spec)
    tasks = generate_tasks(world, 16, seed=0)  # from the studio's own template kit
    expected = expected_outcomes(world, tasks)
    assert set(expected.values()) == {"act", "refuse"}
    for task in tasks:
        assert expected[task.id] == ("refuse" if outcome_of(task) == "refused" else "act"), task.id


def test_tau2_telecom_tasks_the_customer_acts_on_are_act():
    from pipeline.world import domain_of_directory
    from tests.needs import need_tau2

    path = need_tau2("telecom")
    world, tasks = domain_of_directory(path).require("tau2_importer", needed_for="test").load(path)
    expected = expected_outcomes(world, tasks)
    customer_only = [t for t in tasks if t.gold_actions and all(a.requestor == "user" for a in t.gold_actions)]
    assert customer_only and all(expected[t.id] == "act" for t in customer_only)  # the customer's side changed
    assert {t.id for t in tasks if not t.gold_actions} <= {t for t, e in expected.items() if e == "refuse"}


def test_the_gold_stays_as_it_was():
    world = load_world(WORLD)
    task = generate_tasks(world, 1, seed=0)[0]
    before = task.model_dump()
    expected_outcome(world, task)
    assert task.model_dump() == before and isinstance(task.gold_actions[0], Action)


def test_an_environment_failing_the_gold_replay_leaves_the_task_unknown_not_the_run_stopped(monkeypatch):
    import pipeline.dataset.expected as expected_module
    from pipeline.errors import InfrastructureError

    world = load_world(WORLD)
    tasks = generate_tasks(world, 4, seed=0)
    real, calls = expected_module.expected_outcome, []

    def flaky(world, task):
        calls.append(task.id)
        if task.id == tasks[0].id:
            raise InfrastructureError("the environment went away")
        return real(world, task)

    monkeypatch.setattr(expected_module, "expected_outcome", flaky)
    expected = expected_outcomes(world, tasks, attempts=2)
    assert expected[tasks[0].id] is None and calls.count(tasks[0].id) == 2
    assert all(expected[t.id] in ("act", "refuse") for t in tasks[1:])
