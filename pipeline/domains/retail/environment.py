"""The retail world behind the environment protocol."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.dataset.task import Task
from pipeline.domains.retail.schema import RetailDB, dump_record
from pipeline.domains.retail.state import RetailWorld, Session
from pipeline.domains.retail.tools import TOOLS
from pipeline.errors import WorldError
from pipeline.grading.verdict import Verdict
from pipeline.rollout.protocols import Agent, User
from pipeline.rollout.runner import Limits, run_episode
from pipeline.rollout.trajectory import Trajectory
from pipeline.world.protocol import EnvironmentMetadata, WorldState


class WorldMismatchError(WorldError, ValueError):
    """A task that refers to another world than the one this environment serves."""


class RetailEnvironment:
    """Reference implementation of the six-function environment protocol."""

    def __init__(self, world: RetailWorld, limits: Limits | None = None) -> None:
        self.world = world
        self.limits = limits or Limits()

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=self.world.name,
            policy=self.world.policy,
            tools=TOOLS.schemas(),
            state_schema=RetailDB.model_json_schema(),
        )

    def _check(self, task: Task) -> None:
        if task.world != self.world.name:
            raise WorldMismatchError(
                f"task {task.id!r}: field world is {task.world!r}, but this environment serves {self.world.name!r}"
            )

    def init(self, task: Task, seed: int = 0) -> Session:
        """A fresh, isolated session at the task's initial state (the base world; retail has no randomness)."""
        self._check(task)
        return self.world.session()

    def run(
        self, task: Task, agent: Agent, user: User, seed: int = 0, limits: Limits | None = None, trial: int = 0
    ) -> Trajectory:
        session = self.init(task, seed)
        return run_episode(
            self.world, task, agent, user, trial=trial, seed=seed, limits=limits or self.limits, session=session
        )

    def state(self, session: Session) -> WorldState:
        return WorldState(
            world=self.world.name,
            base_fingerprint=self.world.fingerprint,
            changed=session.changed(),
            hash=session.state_hash(),
        )

    def query_data(self, table: str, predicate: Callable[[Any], bool] | dict[str, Any] | None = None) -> list[dict]:
        """Base-world records matching a predicate (grounding for synthesized tasks)."""
        return [dump_record(r) for r in self.world.query(table, predicate)]

    def reward(self, task: Task, trajectory: Trajectory) -> Verdict:
        from pipeline.grading.grader import grade

        self._check(task)
        return grade(self.world, task, trajectory, limits=self.limits)
