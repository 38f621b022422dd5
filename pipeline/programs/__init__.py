"""Agent programs: agents that run their own tool loop (a framework, an in-house service), measured like any agent.

`agent`: the `program:MODULE:FACTORY` agent (one `AgentProgram` per episode, its turn one `respond`, its failures
named); `hub`: the process's MCP server at which each running episode's tools are served, on the loop's own session;
`scripted`: a domain's scripted oracle as a program over MCP (the harness's own check); `teacher`: gold conversations
replayed through a program, its model a gold teacher, so training data is the calls the program makes; `served`: a
checkpoint served for programs (`serve=PATH`).
"""

from pipeline.programs.agent import NotAProgramError, ProgramAgent, ProgramAgentEpisode, program_agent, with_settings
from pipeline.programs.hub import EpisodeHub, HubError, LiveEpisode, episode_hub
from pipeline.programs.scripted import OracleProgram
from pipeline.programs.teacher import GoldTeacher, Replayed, replay_in_their_worlds, replay_through_program

__all__ = [
    "EpisodeHub",
    "GoldTeacher",
    "HubError",
    "LiveEpisode",
    "NotAProgramError",
    "OracleProgram",
    "ProgramAgent",
    "ProgramAgentEpisode",
    "Replayed",
    "episode_hub",
    "program_agent",
    "replay_in_their_worlds",
    "replay_through_program",
    "with_settings",
]
