"""The world: records in tables, copy-on-write sessions, the tools that read and write them, the `Domain`
boundary a world's domain is reached through, and the adapter that makes any environment behind the six functions
(`pipeline.protocol`) a domain."""

from pipeline.world.arith import ExpressionError, evaluate
from pipeline.world.bounds import ToolBoundError, ToolResultError, ToolTimeoutError, bounds_for, call_tool
from pipeline.world.domain import Domain, Invariant, StaticInput
from pipeline.world.origin import domain_label
from pipeline.world.protocol_domain import (
    CounterfactualError,
    ProtocolDomain,
    ProtocolError,
    ProtocolSession,
    ProtocolWorld,
    is_environment_factory,
)
from pipeline.world.registry import (
    DEFAULT_DOMAIN,
    checked_world,
    domain_of_directory,
    domain_spec,
    load_world,
    resolve_domain,
)
from pipeline.world.tables import (
    Record,
    Session,
    SessionUnusableError,
    ToolEvent,
    World,
    WorldLoadError,
    dump_full,
    dump_record,
    filter_field_problem,
)
from pipeline.world.tools import ReadOnlyError, ToolError, ToolRegistry, execute, synchronise
from pipeline.world.vocabulary import EMPTY, Vocabulary

__all__ = [
    "CounterfactualError",
    "DEFAULT_DOMAIN",
    "Domain",
    "EMPTY",
    "ExpressionError",
    "Invariant",
    "ProtocolDomain",
    "ProtocolError",
    "ProtocolSession",
    "ProtocolWorld",
    "ReadOnlyError",
    "Record",
    "Session",
    "SessionUnusableError",
    "StaticInput",
    "ToolBoundError",
    "ToolError",
    "ToolEvent",
    "ToolRegistry",
    "ToolResultError",
    "ToolTimeoutError",
    "Vocabulary",
    "World",
    "WorldLoadError",
    "bounds_for",
    "call_tool",
    "checked_world",
    "domain_label",
    "domain_of_directory",
    "domain_spec",
    "dump_full",
    "dump_record",
    "evaluate",
    "filter_field_problem",
    "execute",
    "is_environment_factory",
    "load_world",
    "resolve_domain",
    "synchronise",
]
