"""The boundaries the loop reaches outside itself through: an environment's six functions (`environment`), and
an environment served over HTTP as one of them (`client`)."""

from pipeline.protocol.client import (
    EnvironmentRequestError,
    EnvironmentUnavailableError,
    ServedEnvironment,
    served_worlds,
)
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
    "EnvironmentRequestError",
    "EnvironmentState",
    "EnvironmentUnavailableError",
    "Reward",
    "ServedEnvironment",
    "Side",
    "TableSchema",
    "ToolResult",
    "as_model",
    "served_worlds",
]
