"""Language-model roles in synthesis (`agentloop synthesize --llm openai:MODEL@URL [--llm-proposals N]`).

The synthesized tasks go through the same roles as generated ones (`pipeline.explore.llm`): a rewording joins
only when it keeps every stated value and the oracle still solves the task; a proposed evolution (one more request
of the same customer's, appended to a synthesized task) only when its gold replays in a fresh session and the
oracle solves it. A task whose wording changed or that was evolved gets the oracle's passing trajectory of the new
task (trial 0, as verification runs it), so the trajectories stay the gold of the tasks beside them; the rest keep
theirs. The manifest records what the model offered and what the environment kept (`llm`). Proposals keep the
parent's customer, so a partitioned world's training split holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.errors import TaskError
from pipeline.rollout import run_episode
from pipeline.synth.result import SynthesisResult
from pipeline.users import ScriptedUser
from pipeline.world import World

if TYPE_CHECKING:
    from pipeline.explore import LLMRoles


class LLMTrajectoryError(TaskError):
    """The oracle did not pass a task the model's output changed, although it was verified to."""


def refine(world: World, result: SynthesisResult, roles: LLMRoles, proposals: int, seed: int = 0) -> SynthesisResult:
    """`result` with the model's verified rewordings and evolutions, and the gold trajectories that go with them."""
    from pipeline.explore import with_llm
    from pipeline.grading import grade

    before = {t.id: (t, traj) for t, traj in zip(result.tasks, result.trajectories, strict=True)}
    tasks = with_llm(world, result.tasks, roles, proposals, seed=seed)
    oracle = world.domain.require("oracle", needed_for="synthesize --llm")()
    user = ScriptedUser()
    trajectories = []
    for task in tasks:
        kept = before.get(task.id)
        if kept is not None and kept[0] == task:
            trajectories.append(kept[1])
            continue
        traj = run_episode(world, task, oracle, user, trial=0)
        if not grade(world, task, traj).passed:
            raise LLMTrajectoryError(f"task {task.id}: the oracle's trajectory with the scripted customer failed")
        trajectories.append(traj)
    manifest = {**result.manifest, "tasks": len(tasks), "llm": roles.report.to_dict()}
    return SynthesisResult(tasks=tasks, trajectories=trajectories, manifest=manifest)
