"""Any environment behind the six functions as a domain the loop runs: the adapter from `pipeline.protocol`.

`ProtocolDomain(factory, spec)` turns an environment factory (`factory(world_name) -> EnvironmentProtocol`: a
class of your own, or `ServedEnvironment` over HTTP) into a `Domain`. What the loop knows of it is what crosses
the boundary:

- the tables and tools come from `get_metadata()` (record and argument models built from their JSON Schema,
  each tool's kind, each table's owner field);
- a world is its base records, read once through `query_data` (generic exploration and grounding read them);
- every episode session holds one environment episode (`init(task)` runs the task's set-up there): each tool call
  is the environment's `run`, and the session mirrors the records the environment reports changed (`state()`),
  so the world log, state diffs and hashes the grader reads are computed as for any world, from what the
  environment executed. A refusal raises ToolError with the environment's message and changes nothing.

What cannot cross: a counterfactual world (`World.altered`: a record set otherwise than any episode can reach) is
refused with a `CounterfactualError`, and exploration falls back to real records; the environment's own rules are
its own (no invariants are replayed here); records are never deleted (the protocol reports changed records only).
"""

from __future__ import annotations

import copy
import functools
import inspect
import logging
import queue
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from pipeline.errors import AgentloopError, InfrastructureError, InputError, WorldError
from pipeline.protocol import (
    EnvironmentMetadata,
    EnvironmentProtocol,
    EnvironmentState,
    Reward,
    Side,
    TableSchema,
    ToolResult,
    as_model,
)
from pipeline.world.domain import Domain
from pipeline.world.schema_types import arguments_model, record_model
from pipeline.world.tables import Session, World, WorldLoadError, dump_record, world_name
from pipeline.world.tools import ToolError, ToolRegistry, ToolSpec

log = logging.getLogger(__name__)

PROTOCOL_METHODS: tuple[str, ...] = ("get_metadata", "init", "run", "state", "query_data", "close")
"""What an object must have to be taken for an environment (or a class of them)."""
ERROR_PREFIX = "Error: "


class CounterfactualError(WorldError, ValueError):
    """A world with records set otherwise was asked of an environment the loop reaches only through its functions."""


class ProtocolError(InfrastructureError, ValueError):
    """An environment answered outside the protocol (a malformed model, a record its schema does not allow): the
    environment's fault, never the agent's."""


def is_environment_factory(obj: Any) -> bool:
    """Whether `obj` is a class (or factory) of environments: it has the protocol's methods."""
    return all(callable(getattr(obj, name, None)) for name in PROTOCOL_METHODS)


def missing_methods(obj: Any) -> list[str]:
    """The protocol's methods `obj` lacks."""
    return [name for name in PROTOCOL_METHODS if not callable(getattr(obj, name, None))]


def takes_a_world(fn: Any) -> bool:
    """Whether `fn` is a function of one required argument (a factory of environments, given the world's name)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    required = [p for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(required) == 1


class EnvironmentFaultError(InfrastructureError):
    """An environment behind the protocol raised or answered outside it: not the agent's doing (the trial is
    retried and excluded, as when a served environment answers 5xx)."""


class ProtocolDomain(Domain):
    """An environment of any implementation as a domain (see the module docstring). `spec` names it: the
    `module:attribute` or URL it was resolved from; it is also its name, so a domain is known by where it came from."""

    def __init__(self, factory: Callable[[str], EnvironmentProtocol], spec: str, worlds: list[str] | None = None):
        self.factory, self.spec, self.name = factory, spec, spec
        self.worlds = worlds
        """The world names the environment serves, where it says (a served environment does); None: unknown."""
        self._metadata: EnvironmentMetadata | None = None
        self._lock = threading.Lock()
        self._tables: dict[str, type[BaseModel]] = {}
        self._user_tables: dict[str, type[BaseModel]] = {}
        self._tools = ToolRegistry()
        self._user_tools: ToolRegistry | None = None
        if worlds:
            self._learn(self._metadata_of(worlds[0]))

    # ---- what the metadata says ---------------------------------------------------------------------------------
    @property
    def metadata(self) -> EnvironmentMetadata:
        if self._metadata is None:
            raise WorldError(f"domain {self.name!r}: no world of it was loaded yet, so its tools are not known")
        return self._metadata

    @property
    def tables(self) -> Mapping[str, type[BaseModel]]:  # type: ignore[override]
        return self._tables

    @property
    def user_tables(self) -> Mapping[str, type[BaseModel]]:  # type: ignore[override]
        return self._user_tables

    @property
    def tools(self) -> ToolRegistry:  # type: ignore[override]
        return self._tools

    @property
    def user_tools(self) -> ToolRegistry | None:  # type: ignore[override]
        return self._user_tools

    def _metadata_of(self, world: str) -> EnvironmentMetadata:
        env = self._open(world)
        try:
            return _answer(EnvironmentMetadata, env.get_metadata(), f"{self.name} get_metadata()")
        finally:
            env.close()

    def _open(self, world: str) -> EnvironmentProtocol:
        try:
            return self.factory(world)
        except (InputError, InfrastructureError, WorldError):
            raise
        except Exception as exc:  # noqa: BLE001 - the environment's own code: named, typed
            raise WorldLoadError(
                f"domain {self.name!r}: opening world {world!r} failed: {type(exc).__name__}: {exc}"
            ) from None

    def _learn(self, meta: EnvironmentMetadata) -> None:
        """Take the tables and tools the first world's metadata describes; a later world must describe the same."""
        with self._lock:
            if self._metadata is not None:
                if (meta.tools, meta.tool_kinds, meta.tables) != (
                    self._metadata.tools,
                    self._metadata.tool_kinds,
                    self._metadata.tables,
                ):
                    raise ProtocolError(
                        f"domain {self.name!r}: world {meta.world!r} describes other tools or tables than world"
                        f" {self._metadata.world!r}; one domain's worlds share them"
                    )
                return
            for kinds, schemas, side in (
                (meta.tool_kinds, meta.tools, "tool_kinds"),
                (meta.user_tool_kinds, meta.user_tools, "user_tool_kinds"),
            ):
                named = {(s.get("function", s) or {}).get("name") for s in schemas if isinstance(s, dict)}
                if unknown := sorted(set(kinds) - named):
                    raise ProtocolError(f"domain {self.name!r}: get_metadata(): {side} names no tool {unknown[0]!r}")
            self._tables = {name: _record_type(name, t) for name, t in meta.tables.items()}
            self._user_tables = {name: _record_type(name, t) for name, t in meta.user_tables.items()}
            self._tools = self._registry(meta.tools, meta.tool_kinds, "assistant")
            self._user_tools = (
                self._registry(meta.user_tools, meta.user_tool_kinds, "user") if meta.user_tools else None
            )
            self._metadata = meta

    @staticmethod
    def _registry(schemas: list[dict], kinds: Mapping[str, str], side: str) -> ToolRegistry:
        registry = ToolRegistry()
        for schema in schemas:
            function = schema.get("function", schema) if isinstance(schema, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(name, str) or not name:
                raise ProtocolError(f"a {side} tool schema without a function name: {str(schema)[:120]}")
            registry.tools[name] = RemoteToolSpec(
                name=name,
                func=_remote_tool(name, side),
                kind=kinds.get(name, "generic"),  # type: ignore[arg-type]
                private=False,
                description=str(function.get("description") or ""),
                args_model=arguments_model(name, function.get("parameters")),
                schema={"type": "function", "function": function},
            )
        return registry

    # ---- the Domain interface ---------------------------------------------------------------------------------
    def load(self, ref: str) -> World | None:
        if self.worlds is not None and ref not in self.worlds:
            return None
        meta = self._metadata_of(ref)
        if self.worlds is None and meta.world not in (ref, world_name(ref)):  # a reference read as its folder's name
            raise ProtocolError(
                f"domain {self.name!r}: world {ref!r} was asked for, but its get_metadata() says world {meta.world!r}"
            )
        self._learn(meta)
        env = self._open(ref)
        try:
            tables: dict[str, dict[str, BaseModel]] = {}
            for name, record_type in {**self._tables, **self._user_tables}.items():
                found = env.query_data(name, None)
                if not isinstance(found, Mapping):
                    raise ProtocolError(
                        f"domain {self.name!r}: query_data({name!r}) returned {type(found).__name__}, not key → record"
                    )
                tables[name] = {str(key): _record(record_type, name, key, rec) for key, rec in found.items()}
        finally:
            env.close()
        world = ProtocolWorld(tables, meta.policy, meta.world, self)
        world.ref = ref
        return world

    def policy(self) -> str:
        return self.metadata.policy

    def owner(self, table: str, record: BaseModel) -> str | None:
        schema = {**self.metadata.tables, **self.metadata.user_tables}.get(table)
        if schema is None or schema.owner is None:
            return None
        value: Any = record
        for part in schema.owner.split("."):
            value = value.get(part) if isinstance(value, dict) else getattr(value, part, None)
        return value if isinstance(value, str) else None

    def identity_fields(self) -> tuple[str, ...]:
        return tuple(self.metadata.identity_fields) if self._metadata is not None else ()


class ProtocolWorld(World):
    """A world of a protocol domain: its base records, read through `query_data`; sessions run on the environment."""

    domain: ProtocolDomain
    ref: str = ""
    """The reference the world was loaded by: what each episode's environment is made with."""

    def session(self, authenticated_user_id: str | None = None) -> Session:
        return ProtocolSession(self, authenticated_user_id=authenticated_user_id)

    def start(self, task: Any, authenticated_user_id: str | None = None) -> Session:
        """A session whose episode starts in `task`'s starting state (the environment runs the set-up)."""
        session = ProtocolSession(self, authenticated_user_id=authenticated_user_id)
        session.open(task.model_dump(mode="json") if isinstance(task, BaseModel) else task)
        return session

    def altered(self, fields: Mapping[tuple[str, str, str], Any]) -> World:
        raise CounterfactualError(
            f"world {self.name!r} of {self.domain.name!r}: records set otherwise ({len(fields)} fields) cannot be"
            " asked of an environment reached through its functions"
        )


class ProtocolSession(Session):
    """One episode of the environment, mirrored: its records as the environment reports them after each call."""

    world: ProtocolWorld

    def __init__(self, world: ProtocolWorld, authenticated_user_id: str | None = None) -> None:
        super().__init__(world, authenticated_user_id=authenticated_user_id)
        self.episode: EnvironmentProtocol | None = None

    def open(self, task: Mapping[str, Any] | None) -> EnvironmentProtocol:
        """Start the episode (once): `init(task)` on a fresh environment of the world, then mirror its state."""
        if self.episode is None:
            episode = self.world.domain._open(self.world.ref or self.world.name)
            _start_closer()
            weakref.finalize(self, _CLOSING.put, episode)  # closed by the closer thread, never inside the GC
            state = _calling(
                self.world.domain.name, "init", episode.init, task, authenticated_user_id=self.authenticated_user_id
            )
            self.episode = episode
            self.begin_call()
            self.mirror(_answer(EnvironmentState, state, f"{self.world.domain.name} init()"))
            self.commit_call()
        return self.episode

    def call(self, name: str, side: str, arguments: dict) -> str:
        """Run one call in the episode (opened from the base world if it was not yet); its content, or ToolError."""
        episode = self.open(None)
        ran = _calling(
            self.world.domain.name,
            f"run({name})",
            episode.run,
            {"name": name, "arguments": arguments},
            cast(Side, side),
        )
        result = _answer(ToolResult, ran, f"{self.world.domain.name} run({name})")
        if result.error:
            message = result.content.removeprefix(ERROR_PREFIX)
            raise ToolError(message, result.category or "precondition")
        state = result.state if result.state is not None else _calling(self.world.domain.name, "state", episode.state)
        self.mirror(_answer(EnvironmentState, state, f"{self.world.domain.name} state()"))
        return result.content

    def mirror(self, state: EnvironmentState) -> None:
        """Make the overlay the environment's changed records (inside the call's journal, so a failure undoes it)."""
        reported = {**state.changed, **state.user_changed}
        types = {**self.world.domain.tables, **self.world.domain.user_tables}
        for table in self.world.table_names:
            now = reported.get(table, {})
            for key in sorted(set(self.overlay[table]) - set(now)):  # back as in the base world
                self._note(table, key)
                del self.overlay[table][key]
            for key, value in now.items():
                current = self.get(table, key)
                if current is not None and dump_record(current) == value:
                    continue
                self._note(table, key)
                self.overlay[table][key] = _record(types[table], table, key, value)
        self.authenticated_user_id = state.authenticated_user_id
        self.transferred = state.transferred

    def _note(self, table: str, key: str) -> None:
        if self._journal is not None and (table, key) not in self._edited_this_call:
            self._journal.append((table, key, self.overlay[table].get(key)))
        self._edited_this_call.add((table, key))

    def environment_reward(self) -> float | None:
        if self.episode is None or not self.world.domain.metadata.scores:
            return None
        reward = getattr(self.episode, "reward", None)
        if reward is None:
            return None
        return _answer(
            Reward, _calling(self.world.domain.name, "reward", reward), f"{self.world.domain.name} reward()"
        ).reward

    def close(self) -> None:
        if self.episode is not None:
            _close_quietly(self.episode)


@dataclass(frozen=True)
class RemoteToolSpec(ToolSpec):
    """A tool of an environment: the agent is shown the environment's own schema, as the environment gave it."""

    schema: dict = field(default_factory=dict)

    @functools.cached_property
    def _schema(self) -> dict:
        return copy.deepcopy(self.schema)


def _remote_tool(name: str, side: str) -> Callable[..., str]:
    def call(session: Session, **arguments: Any) -> str:
        if not isinstance(session, ProtocolSession):
            raise ToolError(f"{name} runs only in an episode of its environment", "internal")
        sent = {k: v for k, v in to_jsonable_python(arguments).items() if v is not None}
        return session.call(name, side, sent)

    call.__name__ = name
    return call


def _record_type(name: str, table: TableSchema) -> type[BaseModel]:
    return record_model(table.record, None, name)


def _record(record_type: type[BaseModel], table: str, key: Any, value: Any) -> BaseModel:
    try:
        return record_type.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(map(str, first["loc"])) or "record"
        raise ProtocolError(
            f"{table}/{key}: field {field}: {first['msg']} (the table's schema says otherwise)"
        ) from None


def _answer(model: type[BaseModel], value: Any, what: str) -> Any:
    try:
        return as_model(model, value)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(map(str, first["loc"])) or model.__name__
        raise ProtocolError(f"{what}: field {field}: {first['msg']} (expected a {model.__name__})") from None


def _calling(domain: str, what: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`method(*args, **kwargs)` of an environment; what it raises beyond the loop's own errors is its fault, typed."""
    try:
        return method(*args, **kwargs)
    except AgentloopError:
        raise
    except Exception as exc:  # noqa: BLE001 - the environment's own code: named, typed, never the agent's
        raise EnvironmentFaultError(f"environment {domain!r}: {what} raised {type(exc).__name__}: {exc}") from exc


_CLOSING: queue.SimpleQueue[EnvironmentProtocol] = queue.SimpleQueue()
_CLOSER: list[threading.Thread] = []
_CLOSER_LOCK = threading.Lock()


def _start_closer() -> None:
    """The thread that closes the episodes of sessions the garbage collector freed. A finalizer runs wherever the
    collector does, possibly inside the HTTP client's connection-pool lock that closing needs (a self-deadlock),
    so a finalizer only queues the episode (`SimpleQueue.put` is safe there) and this thread closes it."""
    with _CLOSER_LOCK:
        if not _CLOSER or not _CLOSER[0].is_alive():
            thread = threading.Thread(target=_close_queued, name="environment episode closer", daemon=True)
            thread.start()
            _CLOSER[:] = [thread]


def _close_queued() -> None:
    while True:
        _close_quietly(_CLOSING.get())


def _close_quietly(episode: EnvironmentProtocol) -> None:
    try:
        episode.close()
    except Exception as exc:  # noqa: BLE001 - closing is best effort: an unclosed episode expires on its side
        log.warning("closing an episode failed: %s: %s", type(exc).__name__, exc)
