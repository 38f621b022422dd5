"""The environment boundary: the six functions every part of the loop reaches an environment through.

An environment is any object with the methods of `EnvironmentProtocol`, made per episode by a factory that is
given the world's name (`EnvironmentFactory`). Everything that crosses the boundary is JSON-shaped (the models
below, a task as its JSON object, a query's predicate as {field: value}), so the same environment runs in
process, behind `agentloop env serve` over HTTP, or with its tools over MCP. Only derived signals cross back:
metadata, the records an episode changed and a hash of them, query results, call outcomes, a reward.

The built-in in-memory worlds are one implementation (`pipeline.environment.Environment`); an environment whose
tools are SQL against PostgreSQL is another (`examples/postgres_env`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

Side = Literal["assistant", "user"]
SIDES: tuple[str, ...] = ("assistant", "user")
ToolKindName = Literal["read", "write", "identity", "transfer", "generic"]
"""What a tool does: reads, writes, establishes who the customer is, hands the conversation to a human, other."""
PROTOCOL_VERSION = "1"
"""Bumped when a model below changes incompatibly; `get_metadata` reports the version an environment speaks."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TableSchema(_Model):
    """One table of an environment's state, as the loop reads it."""

    record: dict[str, Any] = Field(description="JSON Schema of one record (an object schema with `properties`).")
    key: str | None = Field(
        default=None,
        description="The record field that holds each record's key, or None when keys exist only as the table's.",
    )
    owner: str | None = Field(
        default=None,
        description="The (dotted) record field naming the customer who owns a record; None: the records are public.",
    )


class EnvironmentMetadata(_Model):
    """What an environment is: its policy, each side's tools and what each does, the shape of its state."""

    protocol: str = Field(default=PROTOCOL_VERSION, description="The version of this protocol the environment speaks.")
    domain: str = Field(description="The environment's name (a built-in domain, module:attribute, or its own).")
    world: str = Field(description="The world served; tasks name it in their `world` field.")
    world_digest: str = Field(description="A digest of the world's base state: equal digests, equal worlds.")
    policy: str = Field(description="The policy document the agent is held to.")
    tools: list[dict[str, Any]] = Field(description="OpenAI-style JSON schemas of the agent's tools ('assistant').")
    tool_kinds: dict[str, ToolKindName] = Field(
        description="Agent tool name → what it does: read, write, identity (establishes the customer), transfer."
    )
    user_tools: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The customer's own tools ('user' side, dual control); empty where the customer only talks.",
    )
    user_tool_kinds: dict[str, ToolKindName] = Field(default_factory=dict, description="Likewise for user_tools.")
    tables: dict[str, TableSchema] = Field(description="The agent side's tables, in order: name → schema.")
    user_tables: dict[str, TableSchema] = Field(
        default_factory=dict, description="The customer side's tables, likewise; empty without dual control."
    )
    identity_fields: list[str] = Field(
        default_factory=list,
        description="What a customer can state to be identified beyond the identity tools' arguments (e.g. email).",
    )
    scores: bool = Field(
        default=True,
        description="Whether `reward()` scores an episode by the environment's own rules (the loop records it beside"
        " its verdict); False: it has no score of its own to add (the built-in worlds: their reward is the loop's"
        " own grader), and the loop does not ask.",
    )


class EnvironmentState(_Model):
    """An episode's state as far as the loop reads it."""

    world_digest: str = Field(description="The base world's digest (see EnvironmentMetadata).")
    changed: dict[str, dict[str, dict[str, Any]]] = Field(
        description="Agent side: per table, key → record (JSON) for every record that differs from the base world."
    )
    user_changed: dict[str, dict[str, dict[str, Any]]] = Field(
        default_factory=dict, description="Customer side, likewise; empty without dual control."
    )
    authenticated_user_id: str | None = Field(
        default=None, description="The customer the episode is authenticated as, or None: nobody yet."
    )
    transferred: bool = Field(default=False, description="Whether the conversation was handed to a human.")
    hash: str = Field(description="A hash of the base digest and every changed record: equal states, equal hashes.")


class ToolResult(_Model):
    """One executed tool call, as its caller reads it."""

    content: str = Field(description="What the caller sees: the tool's output, or 'Error: …' for a refusal.")
    error: bool = Field(default=False, description="True when the tool refused or failed; then nothing changed.")
    category: str | None = Field(
        default=None,
        description="A refusal's kind: invalid_arguments, not_found, precondition, unauthorized, transferred, …",
    )
    state: EnvironmentState | None = Field(
        default=None,
        description="The episode's state after the call, where the environment sends it along (a served one does:"
        " it saves the caller a `state()` round trip); None: ask `state()`.",
    )


class CallRecord(_Model):
    """One call the environment executed: its ledger, in order, is the authority on what an episode did."""

    side: Side = Field(description="Who made the call: 'assistant' (the agent) or 'user' (the customer).")
    name: str = Field(description="The tool called.")
    arguments: dict[str, Any] = Field(description="The arguments as given.")
    result: ToolResult = Field(description="What the call returned.")


class Reward(_Model):
    """The environment's own score of the episode so far; the loop reports it beside its own verdict."""

    reward: float = Field(description="The score, 1.0 for a success.")
    info: dict[str, Any] = Field(default_factory=dict, description="Whatever the environment says about it.")


@runtime_checkable
class EnvironmentProtocol(Protocol):
    """One episode of one world. `init` starts it; `close` ends it and frees what it holds."""

    def get_metadata(self) -> EnvironmentMetadata:
        """The policy, each side's tools and what each does, the state schema."""
        ...

    def init(self, task: Mapping[str, Any] | None = None, *, authenticated_user_id: str | None = None) -> Any:
        """A fresh, isolated episode in the task's starting state (its set-up run on both sides); None: the base
        world. `authenticated_user_id`: whom it starts authenticated as (None: nobody). Returns its state."""
        ...

    def run(self, call: Mapping[str, Any], side: Side = "assistant") -> Any:
        """Execute one call `{name, arguments}` on `side`; a refusal changes nothing. Returns a `ToolResult`."""
        ...

    def state(self) -> Any:
        """The episode's `EnvironmentState`."""
        ...

    def query_data(self, table: str, predicate: Mapping[str, Any] | None = None) -> Mapping[str, dict[str, Any]]:
        """key → record (JSON) of `table`'s records whose fields equal `predicate` ({dotted.field: value}), in key
        order: as the episode sees them, or the base world before `init`."""
        ...

    def reward(self) -> Any:
        """The environment's own `Reward` for the episode so far."""
        ...

    def say(self, text: str, side: Side = "assistant") -> None:
        """A message of the conversation (some rules read what was said, e.g. a customer's confirmation)."""
        ...

    def calls(self) -> list[Any]:
        """Every call executed in this episode, in order (`CallRecord`s)."""
        ...

    def close(self) -> None:
        """End the episode; what it changed is discarded. Calling it twice is harmless."""
        ...


EnvironmentFactory = Callable[[str], EnvironmentProtocol]
"""Makes one environment for the named world (one episode at a time; the loop makes one per episode)."""


def as_model(model: type[BaseModel], value: Any) -> Any:
    """`value` (a model of that type, another model with the same fields, or a JSON object) as `model`."""
    if isinstance(value, model):
        return value
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return model.model_validate(value)
