"""The agent-program boundary: an agent that runs its own tool loop (a framework, an in-house service).

The harness drives the simulated customer exactly as for a model agent; the program gets each customer message
and returns its reply, making its own tool calls meanwhile against its episode's MCP server (the environment
executes them, and its ordered ledger of calls is the trajectory) and its own model calls through its episode's
model proxy (an OpenAI-compatible base URL that records them). A factory makes one program per episode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class ProgramEpisode(BaseModel):
    """What a program is given when its episode starts."""

    model_config = ConfigDict(extra="forbid")

    mcp_url: str = Field(
        description="The episode's MCP server (streamable HTTP): the agent's tools, only this episode's."
    )
    policy: str = Field(description="The policy the agent is held to (its system prompt, as the program sees fit).")
    model_base_url: str | None = Field(
        default=None,
        description="An OpenAI-compatible base URL (…/v1) for the program's model calls, recorded per episode;"
        " None: the program calls no model the harness knows of.",
    )
    model: str | None = Field(default=None, description="The model name to ask the base URL for.")
    task_id: str = Field(description="The task the episode plays (for the program's logs; never its gold).")
    trial: int = Field(default=0, description="The trial number.")
    seed: int = Field(default=0, description="The episode's seed, for a program that samples.")


@runtime_checkable
class AgentProgram(Protocol):
    """One episode of an agent program."""

    def start(self, episode: ProgramEpisode) -> None:
        """The episode begins: where its tools and its model are, and the policy."""
        ...

    def respond(self, customer_text: str) -> str:
        """The program's whole turn: read the customer's message, call tools and the model as it likes, reply."""
        ...

    def close(self) -> None:
        """The episode is over; free what it holds. Called once, also after a failure."""
        ...


ProgramFactory = Callable[[], AgentProgram]
"""Makes one program per episode (`program:MODULE:FACTORY` names it)."""
