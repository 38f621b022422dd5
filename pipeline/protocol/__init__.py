"""The boundaries the loop reaches outside itself through: an environment's six functions (`environment`) and an
agent program that runs its own tool loop (`program`). An environment served over HTTP is `client.ServedEnvironment`
(imported from its module: it needs httpx, which importing the protocol does not)."""

from pipeline.protocol.environment import (
    PROTOCOL_VERSION,
    SIDES,
    CallRecord,
    EnvironmentFactory,
    EnvironmentMetadata,
    EnvironmentProtocol,
    EnvironmentState,
    Reward,
    Side,
    TableSchema,
    ToolResult,
    as_model,
)
from pipeline.protocol.program import AgentProgram, ProgramEpisode, ProgramFactory

__all__ = [
    "AgentProgram",
    "ProgramEpisode",
    "ProgramFactory",
    "PROTOCOL_VERSION",
    "SIDES",
    "CallRecord",
    "EnvironmentFactory",
    "EnvironmentMetadata",
    "EnvironmentProtocol",
    "EnvironmentState",
    "Reward",
    "Side",
    "TableSchema",
    "ToolResult",
    "as_model",
]
