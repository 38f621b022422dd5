"""Agent programs: agents that run their own tool loop (a framework, an in-house service), measured like any agent.

`agent`: the `program:MODULE:FACTORY` agent (one `AgentProgram` per episode, its turn one `respond`, its failures
named); `hub`: the process's MCP server at which each running episode's tools are served, on the loop's own session;
`scripted`: a domain's scripted oracle as a program over MCP (the harness's own check).
"""

from pipeline.programs.agent import NotAProgramError, ProgramAgent, ProgramAgentEpisode, program_agent
from pipeline.programs.hub import EpisodeHub, HubError, LiveEpisode, episode_hub
from pipeline.programs.scripted import OracleProgram

__all__ = [
    "EpisodeHub",
    "HubError",
    "LiveEpisode",
    "NotAProgramError",
    "OracleProgram",
    "ProgramAgent",
    "ProgramAgentEpisode",
    "episode_hub",
    "program_agent",
]
