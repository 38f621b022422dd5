"""The two participants of an episode besides the world: the agent and the simulated user.

Each has one verb. A participant is a factory (`start`) for per-episode state, so one model can serve
many concurrent episodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pipeline.dataset import Task
from pipeline.errors import InfrastructureError
from pipeline.rollout.trajectory import Message, Termination, ToolCall, Usage

if TYPE_CHECKING:
    from pipeline.rollout.runner import EpisodeTools


@dataclass
class EpisodeInfo:
    """What a participant may know when an episode starts.

    `task` is there for scripted participants (the oracle, the scripted user); model-backed agents must
    use only `policy`, `tools` and the messages.
    """

    task: Task
    trial: int
    seed: int
    policy: str
    tools: list[dict]
    persona: str | None = None
    extra: dict = field(default_factory=dict)
    domain: str | None = None
    """The world's domain as `pipeline.world.domain_spec` names it (a built-in's name, else where it came from), so a
    scripted participant takes its own domain's phrasing and rules in any process."""
    user_tools: list[dict] = field(default_factory=list)
    """Schemas of the tools the customer holds (dual control); empty when the customer only talks."""


@dataclass
class UserReply:
    content: str
    stop: bool = False
    usage: Usage = field(default_factory=Usage)
    termination: Termination | None = None  # with stop: user_stop (default), user_transfer or user_out_of_scope
    tool_calls: list[ToolCall] = field(default_factory=list)
    """Calls of the customer's own tools (dual control): they run on the customer's side, their results come back
    to the customer in the next `respond`, and the agent sees neither; `content` is then not said to the agent."""


@runtime_checkable
class AgentEpisode(Protocol):
    def act(self, messages: list[Message]) -> Message:
        """Next assistant message: text for the user, or tool call(s)."""
        ...


@runtime_checkable
class OwnToolLoop(Protocol):
    """An agent episode that runs its own tool loop (an agent program, `pipeline.programs`): its `act` is the
    agent's whole turn and returns the reply text; the tool calls it makes meanwhile go through the `EpisodeTools`
    the runner binds right after `start`, and the runner puts them in the trajectory before the reply. A model
    agent's episode has neither method and is driven as before."""

    def bind_tools(self, tools: EpisodeTools) -> None:
        """The episode's tools (its session, under the episode's limits), before the first `act`."""
        ...

    def end_episode(self) -> None:
        """The episode is over (also after a failure or an infrastructure error): free what it holds."""
        ...


@runtime_checkable
class Agent(Protocol):
    name: str

    def start(self, info: EpisodeInfo) -> AgentEpisode: ...


@runtime_checkable
class UserEpisode(Protocol):
    def respond(self, messages: list[Message]) -> UserReply:
        """Next customer message (the first call opens the conversation). With dual control, `messages` also holds
        the customer's own tool calls (role 'user' with tool_calls) and their results (role 'tool')."""
        ...


@runtime_checkable
class User(Protocol):
    name: str

    def start(self, info: EpisodeInfo) -> UserEpisode: ...


@runtime_checkable
class TurnDecoder(Protocol):
    """The agent steps of many episodes in flight: submit each episode's request, `step` until replies come.

    An agent that can serve several episodes at once (one forward pass for many, concurrent requests) offers
    one through `Agent.decoder()`; `pipeline.trials.batch` falls back to one `act` at a time otherwise.
    """

    def submit(self, key: Any, episode: AgentEpisode, messages: list[Message]) -> None: ...

    def step(self) -> list[tuple[Any, Message | InfrastructureError]]:
        """Advance the pending requests; the (key, reply) of those that finished (at least one, if any pend)."""
        ...
