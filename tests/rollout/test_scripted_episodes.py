"""Whole episodes with no model: the oracle and the scripted user solve every generated task."""

from __future__ import annotations

from collections import Counter

from pipeline.authoring import generate_tasks
from pipeline.dataset.replay import replay_gold
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.grading import grade
from pipeline.rollout.runner import Limits, run_episode
from pipeline.users.scripted import ScriptedUser
from tests.agents.scripted_helpers import N_TASKS, small_tasks, small_world, strip_timings


def test_oracle_solves_every_generated_task_on_every_trial():
    world, tasks = small_world(), small_tasks()
    assert len(tasks) >= 60
    personas: Counter[str] = Counter()
    for task in tasks:
        expected = replay_gold(world, task).state_hash()
        for trial in range(4):
            traj = run_episode(world, task, OracleAgent(), ScriptedUser(), trial=trial, limits=Limits())
            verdict = grade(world, task, traj)
            assert traj.final_hash == expected, (task.id, trial)
            assert verdict.passed, (task.id, trial, verdict.failed_components, verdict.diagnostics)
            assert traj.termination == "user_stop"
            personas[traj.persona] += 1
    assert len(personas) == 4 and sum(personas.values()) == 4 * N_TASKS


def test_same_seed_same_trajectories_apart_from_timings():
    world = small_world()
    first = [run_episode(world, t, OracleAgent(), ScriptedUser(), trial=1) for t in small_tasks()]
    tasks = generate_tasks(world, N_TASKS, seed=0)
    second = [run_episode(world, t, OracleAgent(), ScriptedUser(), trial=1) for t in tasks]
    assert [strip_timings(a) for a in first] == [strip_timings(b) for b in second]


def test_oracle_solves_tasks_generated_from_the_tau2_world(tau2_world):
    for task in generate_tasks(tau2_world, 30, seed=4):
        traj = run_episode(tau2_world, task, OracleAgent(), ScriptedUser())
        assert grade(tau2_world, task, traj).passed, task.id
