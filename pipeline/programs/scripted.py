"""Scripted agents as programs: a domain's oracle (or flawed agent) running its own tool loop over MCP.

`OracleProgram` wraps any agent spec the registry makes without a model (default `oracle`: the world's domain's
scripted oracle, `domain.require("oracle")`) as an `AgentProgram`: each turn it feeds the customer's message to the
scripted agent, executes every tool call the agent decides through the episode's MCP server
(`McpEnvironmentClient`), hands the result back, and returns the agent's first message to the customer as its
reply. It is the harness's own check: the oracle as a program must give the verdicts the in-process oracle gives.

    agentloop measure --agent program:pipeline.programs.scripted:OracleProgram ...

A scripted agent plays from its task (the gold, the customer's script), which no real program is given: a program
that defines `scripted_from(info)` is handed the episode's `EpisodeInfo` before `start` (see
`pipeline.programs.agent`).
"""

from __future__ import annotations

from pipeline.environment import McpEnvironmentClient
from pipeline.errors import InputError
from pipeline.protocol import ProgramEpisode
from pipeline.rollout import Agent, EpisodeInfo, Message
from pipeline.rollout.protocols import AgentEpisode

MAX_STEPS = 1000
"""Tool calls in one turn before the program gives up on a scripted agent that never speaks (the harness's turn
limits end the episode long before)."""


class ScriptedProgramError(InputError):
    """A scripted program used out of order (a turn before `scripted_from` and `start`)."""


class OracleProgram:
    """A scripted agent (`agent`: an agent spec, `oracle` by default, or an `Agent`) as an agent program over MCP."""

    def __init__(self, agent: str | Agent = "oracle") -> None:
        self.agent = agent
        self.agent_episode: AgentEpisode | None = None
        self.client: McpEnvironmentClient | None = None
        self.messages: list[Message] = []

    def scripted_from(self, info: EpisodeInfo) -> None:
        """The episode's full information (its task): what the scripted agent plays from."""
        from pipeline.agents import make_agent

        agent = make_agent(self.agent) if isinstance(self.agent, str) else self.agent
        self.agent_episode = agent.start(info)

    def start(self, episode: ProgramEpisode) -> None:
        self.client = McpEnvironmentClient(episode.mcp_url)
        self.messages = []

    def respond(self, customer_text: str) -> str:
        if self.agent_episode is None or self.client is None:
            raise ScriptedProgramError("OracleProgram: respond before scripted_from(info) and start(episode)")
        self.messages.append(Message(role="user", content=customer_text))
        for _ in range(MAX_STEPS):
            message = self.agent_episode.act(self.messages)
            self.messages.append(message)
            if not message.tool_calls:
                return message.content or ""
            for call in message.tool_calls:
                result = self.client.call(call.name, call.arguments or {})
                self.messages.append(
                    Message(
                        role="tool", content=result.content, tool_call_id=call.id, name=call.name, error=result.error
                    )
                )
        raise ScriptedProgramError(f"OracleProgram: {MAX_STEPS} tool calls in one turn without a reply")

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
