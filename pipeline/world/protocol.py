"""The environment protocol: six functions any world implements to run through the whole pipeline.

Bring your own environment: implement these and measure, synthesize, curate, train and gate all work
unchanged. The retail world (`pipeline.domains.retail.environment.RetailEnvironment`) is the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from pipeline.dataset.task import Task
from pipeline.grading.verdict import Verdict
from pipeline.rollout.protocols import Agent, User
from pipeline.rollout.runner import Limits
from pipeline.rollout.trajectory import Trajectory


class EnvironmentMetadata(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="World name; tasks refer to it.")
    policy: str = Field(description="The policy document the agent is held to.")
    tools: list[dict] = Field(description="OpenAI-style JSON schemas of every tool.")
    state_schema: dict = Field(description="JSON Schema of the full state (the database).")


class WorldState(BaseModel):
    """An episode's state: the base world's fingerprint plus every record that differs from it."""

    model_config = ConfigDict(extra="forbid")

    world: str
    base_fingerprint: str
    changed: dict[str, dict[str, Any]]
    hash: str = Field(description="sha256 over base fingerprint and changed records; equal states, equal hashes.")


@runtime_checkable
class Environment(Protocol):
    def get_metadata(self) -> EnvironmentMetadata: ...

    def init(self, task: Task, seed: int = 0) -> Any: ...

    def run(
        self, task: Task, agent: Agent, user: User, seed: int = 0, limits: Limits | None = None, trial: int = 0
    ) -> Trajectory: ...

    def state(self, session: Any) -> WorldState: ...

    def query_data(self, table: str, predicate: Callable[[Any], bool] | dict[str, Any] | None = None) -> list[dict]: ...

    def reward(self, task: Task, trajectory: Trajectory) -> Verdict: ...
