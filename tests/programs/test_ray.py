"""A program agent on Ray: it travels to the workers by its spec, each worker starts its own episode hub, and the
results are the serial oracle's."""

from __future__ import annotations

import pytest

from pipeline.agents import make_agent
from pipeline.authoring import generate_tasks
from pipeline.trials.executor import SerialExecutor
from pipeline.trials.ray_executor import RayExecutor
from pipeline.users.scripted import ScriptedUser
from pipeline.world import load_world

pytestmark = pytest.mark.slow  # a Ray instance takes ~10 s to start


def test_the_oracle_as_a_program_on_ray_gives_the_serial_oracles_verdicts(ray_cluster):
    world = load_world("gen-3")
    tasks = generate_tasks(world, 4, seed=2)
    serial = list(SerialExecutor().run(world, tasks, make_agent("oracle"), ScriptedUser(), trials=2))
    program = make_agent("program:pipeline.programs.scripted:OracleProgram")
    on_ray = list(RayExecutor(workers=2).run(world, tasks, program, ScriptedUser(), trials=2))
    assert [(r.task.id, r.trial, r.verdict) for r in on_ray] == [(r.task.id, r.trial, r.verdict) for r in serial]
    assert all(r.verdict.passed and r.trajectory.tool_loop == "agent" for r in on_ray)
