"""The boundaries the loop reaches outside itself through: an environment's six functions (`environment`); an
environment served over HTTP as one of them is `client.ServedEnvironment` (imported from its module: it needs
httpx, which importing the protocol does not)."""

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

__all__ = [
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
