"""Replay-verification of pooled trajectories: nothing recorded is trusted until the world agrees.

Each trajectory's tool calls are re-executed in a fresh session of the world (the grader's replay); every
recorded tool result, the recorded world log and end state must equal the replayed ones, and a recorded
verdict must equal the verdict the grader gives now. Anything else is rejected with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.curate.pool import PoolItem, Rejection
from pipeline.dataset import Task
from pipeline.grading import Verdict, grade
from pipeline.rollout import Limits
from pipeline.world import World, domain_spec


@dataclass
class Verified:
    item: PoolItem
    task: Task
    verdict: Verdict


def replay_verify(
    world: World, tasks: dict[str, Task], item: PoolItem, limits: Limits | None = None
) -> Verified | Rejection:
    traj = item.trajectory
    task = tasks.get(traj.task_id)
    if task is None:
        return Rejection(item.source, "unknown_task", f"task {traj.task_id!r} is not in the task file")
    if traj.infra_error:
        return Rejection(item.source, "infra_error", traj.error or "episode lost to an infrastructure error")
    if traj.world != world.name or task.world != world.name:
        return Rejection(
            item.source,
            "wrong_world",
            f"trajectory world {traj.world!r}, task world {task.world!r}, curating in {world.name!r}",
        )
    if traj.domain != domain_spec(world.domain):
        return Rejection(
            item.source, "wrong_world", f"trajectory domain {traj.domain!r}, curating in {domain_spec(world.domain)!r}"
        )
    verdict = grade(world, task, traj, limits)
    consistency = next((c for c in verdict.components if c.name == "replay_consistency"), None)
    if consistency is not None and not consistency.passed:
        return Rejection(item.source, "replay_mismatch", "; ".join(consistency.details[:3]))
    if item.recorded is not None:
        recorded_passed = item.recorded.get("passed")
        recorded_failed = _failed(item.recorded)
        if recorded_passed != verdict.passed or (
            recorded_failed is not None and recorded_failed != sorted(verdict.failed_components)
        ):
            return Rejection(
                item.source,
                "verdict_mismatch",
                f"recorded passed={recorded_passed} failed={recorded_failed}, replayed passed="
                f"{verdict.passed} failed={sorted(verdict.failed_components)}",
            )
    return Verified(item, task, verdict)


def _failed(recorded: dict) -> list[str] | None:
    comps = recorded.get("components")
    if not isinstance(comps, list):
        return None
    return sorted(c["name"] for c in comps if isinstance(c, dict) and c.get("required", True) and not c.get("passed"))
