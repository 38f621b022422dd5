"""One episode: an agent and a simulated customer in a fresh session of a world, recorded as a trajectory (the
runner, the participants' protocols, personas, turn decoders)."""

from pipeline.rollout.decoders import Concurrent, OneByOne, decoder_for
from pipeline.rollout.persona import persona_for
from pipeline.rollout.protocols import Agent, EpisodeInfo, InfrastructureError, OwnToolLoop, User, UserReply
from pipeline.rollout.runner import (
    MALFORMED,
    NOT_RUN,
    TURN_OVER,
    AgentTurn,
    EpisodeTools,
    Limits,
    episode_steps,
    not_run_message,
    run_episode,
    run_tool_call,
)
from pipeline.rollout.trajectory import (
    PROGRAM_FAILURES,
    STOP_TOKEN,
    USER_ENDED,
    USER_SIGNALS,
    CustomerCall,
    Message,
    Termination,
    ToolCall,
    Trajectory,
    Usage,
)

__all__ = [
    "Agent",
    "AgentTurn",
    "Concurrent",
    "CustomerCall",
    "EpisodeInfo",
    "EpisodeTools",
    "InfrastructureError",
    "Limits",
    "MALFORMED",
    "Message",
    "NOT_RUN",
    "OneByOne",
    "OwnToolLoop",
    "PROGRAM_FAILURES",
    "STOP_TOKEN",
    "TURN_OVER",
    "Termination",
    "ToolCall",
    "Trajectory",
    "USER_ENDED",
    "USER_SIGNALS",
    "Usage",
    "User",
    "UserReply",
    "decoder_for",
    "episode_steps",
    "not_run_message",
    "persona_for",
    "run_episode",
    "run_tool_call",
]
