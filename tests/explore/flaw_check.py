"""The generic flawed agent on a domain's held-out tasks: every trial it planted a flaw in fails."""

from __future__ import annotations

from pipeline.grading.grader import grade
from pipeline.grading.modes import FAILURE_MODES
from pipeline.rollout.runner import run_episode
from pipeline.users.scripted import ScriptedUser


def assert_planted_flaws_fail(world, n: int = 12) -> None:
    tasks = world.domain.require("tasks")(world, n, seed=1)
    flawed = world.domain.require("flaws")(dict.fromkeys(FAILURE_MODES, 0.5), seed=0)
    planted = failed = 0
    for t in tasks:
        traj = run_episode(world, t, flawed, ScriptedUser())
        if flawed.planted(t, 0):
            planted += 1
            failed += not grade(world, t, traj).passed
    assert planted and failed == planted
