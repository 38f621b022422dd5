"""The Ray executor on a local 2-CPU instance: the serial executor's results in the serial order, worker deaths
that lose no trial, trials that stay broken left out, infrastructure errors retried, bugs not swallowed."""

from __future__ import annotations

import json

import pytest

from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import write_tasks
from pipeline.domains.retail.flawed import FlawConfig, FlawedAgent
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.measure import MeasureConfig, measure
from pipeline.trials.executor import SerialExecutor
from pipeline.trials.ray_executor import RayExecutor
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world
from tests.trials.ray_helpers import BuggyAgent, FlakyAgent, KillWorkerAgent

pytestmark = pytest.mark.slow  # a Ray instance takes ~10 s to start
WORLD = "gen-9-10x40x80"


@pytest.fixture(scope="module")
def world():
    return load_world(WORLD)


@pytest.fixture(scope="module")
def tasks(world):
    return generate_tasks(world, 8, seed=3)


def key(result) -> tuple:
    t = result.trajectory
    return (
        result.task.id,
        result.trial,
        result.verdict.passed,
        result.verdict.infra_error,
        t.final_hash,
        [m.model_dump(exclude={"latency_s", "usage"}) for m in t.messages],
    )


def test_same_results_in_the_same_order_as_serial(ray_cluster, world, tasks):
    agent = FlawedAgent(FlawConfig(rates={"invention": 0.4, "misread": 0.4}, seed=2))
    serial = [key(r) for r in SerialExecutor().run(world, tasks, agent, ScriptedUser(), trials=3, seed=5)]
    seen = []
    executor = RayExecutor(workers=2, in_flight_per_worker=2)
    ray_results = list(
        executor.run(
            world, tasks, agent, ScriptedUser(), trials=3, seed=5, on_result=lambda r: seen.append((r.task.id, r.trial))
        )
    )
    assert executor.peak_in_flight == 4  # 24 trials, never more than workers × in_flight_per_worker out at once
    assert [key(r) for r in ray_results] == serial
    assert seen == [(t.id, k) for t in tasks for k in range(3)]
    assert any(not k[2] for k in serial) and any(k[2] for k in serial)  # a mix, so order matters
    skip = {(tasks[0].id, 0), (tasks[2].id, 1)}
    rest = list(RayExecutor(workers=2).run(world, tasks, agent, ScriptedUser(), trials=3, seed=5, skip=skip))
    assert [key(r) for r in rest] == [k for k in serial if (k[0], k[1]) not in skip]


def test_a_killed_worker_loses_no_trial(ray_cluster, world, tasks, tmp_path):
    target = (tasks[3].id, 1)
    agent = KillWorkerAgent(target, tmp_path)
    results = list(RayExecutor(workers=2).run(world, tasks, agent, ScriptedUser(), trials=2))
    assert (tmp_path / "kill-0").exists()  # a worker really died mid-run
    assert [(r.task.id, r.trial) for r in results] == [(t.id, k) for t in tasks for k in range(2)]
    reference = [key(r) for r in SerialExecutor().run(world, tasks, OracleAgent(), ScriptedUser(), trials=2)]
    assert [key(r) for r in results] == reference
    assert all(r.verdict.passed for r in results)


def test_a_trial_that_keeps_killing_workers_is_reported_and_left_out(ray_cluster, world, tasks, tmp_path):
    target = (tasks[1].id, 0)
    agent = KillWorkerAgent(target, tmp_path, times=10)
    results = list(RayExecutor(workers=2, worker_losses=1).run(world, tasks[:3], agent, ScriptedUser(), trials=2))
    assert len(list(tmp_path.glob("kill-*"))) == 2  # first run + one rerun, then given up
    lost = [r for r in results if (r.task.id, r.trial) == target]
    assert len(lost) == 1 and lost[0].verdict.infra_error and lost[0].trajectory.termination == "infra_error"
    assert "worker lost 2 times" in lost[0].trajectory.error
    others = [r for r in results if (r.task.id, r.trial) != target]
    assert len(others) == 5 and all(r.verdict.passed and not r.verdict.infra_error for r in others)


def test_trials_that_only_shared_a_dying_worker_are_not_given_up(ray_cluster, world, tasks, tmp_path):
    """One worker, three trials in flight on it: each death takes the others down too, but they rerun alone."""
    target = (tasks[1].id, 0)
    agent = KillWorkerAgent(target, tmp_path, times=10)
    executor = RayExecutor(workers=1, in_flight_per_worker=3, worker_losses=1)
    results = list(executor.run(world, tasks[:3], agent, ScriptedUser(), trials=2))
    assert len(list(tmp_path.glob("kill-*"))) == 2
    assert [(r.task.id, r.trial) for r in results if r.verdict.infra_error] == [target]
    assert all(r.verdict.passed for r in results if (r.task.id, r.trial) != target)


def test_infrastructure_errors_are_retried_in_the_worker(ray_cluster, world, tasks):
    results = list(RayExecutor(workers=2, retries=1).run(world, tasks[:3], FlakyAgent(), ScriptedUser(), trials=2))
    assert [r.attempts for r in results] == [2] * 6
    assert all(r.verdict.passed for r in results)
    none = list(RayExecutor(workers=2, retries=0).run(world, tasks[:1], FlakyAgent(), ScriptedUser(), trials=1))
    assert none[0].verdict.infra_error and none[0].attempts == 1


def test_a_bug_in_the_agent_is_raised_not_swallowed(ray_cluster, world, tasks):
    with pytest.raises(ValueError, match="a bug in the agent"):
        list(RayExecutor(workers=2).run(world, tasks[:2], BuggyAgent(), ScriptedUser(), trials=1))


def test_measure_with_ray_writes_the_serial_run_byte_for_byte(ray_cluster, world, tasks, tmp_path):
    path = tmp_path / "tasks.jsonl"
    write_tasks(path, tasks)
    base = dict(
        world=WORLD, tasks=path, agent="flawed:plan_adherence=0.3,invention=0.3,seed=1", trials=3, resamples=100
    )
    measure(MeasureConfig(**base), tmp_path / "serial")
    measure(MeasureConfig(**base, executor="ray", workers=2), tmp_path / "ray")
    for name in ("metrics.json", "per_task.csv", "verdicts.jsonl"):
        assert (tmp_path / "serial" / name).read_bytes() == (tmp_path / "ray" / name).read_bytes(), name

    def trajectories(run: str) -> list[dict]:
        rows = [json.loads(line) for line in (tmp_path / run / "trajectories.jsonl").read_text().splitlines()]
        for row in rows:
            row.pop("timings")
            for m in row["messages"]:
                m.pop("latency_s")
        return rows

    assert trajectories("serial") == trajectories("ray")


def test_batched_workers_give_the_serial_results_in_order(ray_cluster, world, tasks):
    agent = FlawedAgent(FlawConfig(rates={"invention": 0.4, "misread": 0.4}, seed=2))
    serial = [key(r) for r in SerialExecutor().run(world, tasks, agent, ScriptedUser(), trials=3, seed=5)]
    batched = list(RayExecutor(workers=2, batch=3).run(world, tasks, agent, ScriptedUser(), trials=3, seed=5))
    assert [key(r) for r in batched] == serial
