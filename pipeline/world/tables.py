"""The generic world: immutable named tables of pydantic records, and copy-on-write episode sessions over them.

A `World` is parsed once and never mutated. Each episode gets a `Session` whose writes land in a small overlay of
copied records, so starting an episode costs nothing and an episode's writes never reach the base world or another
episode. The episode's state is the set of records that differ from the base. Nothing here knows a domain: the
tables, their record types and the tools come from the `Domain` the world belongs to.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Any, Union, cast, get_args, get_origin

from pydantic import BaseModel, ConfigDict

from pipeline.digest import sha256_json
from pipeline.errors import InfrastructureError, WorldError
from pipeline.strict import Strict

if TYPE_CHECKING:
    from pipeline.world.domain import Domain


class WorldLoadError(WorldError, ValueError):
    """A database file that does not fit the schema; the message names the file and the field."""


class RecordError(WorldError, KeyError):
    """A table or record the world does not have, or a record it already has. Still a KeyError, whose message
    keeps its quotes: a tool that meets one records `internal error in TOOL: 'MESSAGE'` in the trajectory."""


class SessionUnusableError(InfrastructureError):
    """A session whose tool call was abandoned past its time bound (`pipeline.world.bounds`): the abandoned call may
    still be writing to it, so nothing is run on it again."""


class Record(Strict):
    """Base for every stored record: strict fields, assignment validated."""

    model_config = ConfigDict(validate_assignment=True)


def dump_record(record: BaseModel) -> dict:
    """A record as τ²-bench JSON: unset optional fields are omitted, as in db.json, unless the record type keeps
    them (`keep_none = True`: a domain whose db.json writes every field, nulls included), or the record is one an
    environment sent (`as_sent = True`: the fields it holds, as sent)."""
    if getattr(record, "as_sent", False):  # a record an environment sent: exactly the fields it holds
        return record.model_dump(mode="json", exclude_unset=True)
    return record.model_dump(mode="json", exclude_none=not getattr(record, "keep_none", False))


def dump_full(record: BaseModel) -> dict:
    """A record with every field, nulls included."""
    return record.model_dump(mode="json")


def world_name(name: str) -> str:
    """A world's name as tasks, their ids and every record carry it: a folder path given as the name (a domain
    naming the world by the reference it read) is reduced to the folder's own name."""
    if "/" not in name and "\\" not in name and name not in (".", ".."):
        return name
    path = Path(name.replace("\\", "/"))
    return path.name if path.name not in ("", ".", "..") else path.resolve().name


class World:
    """An immutable database (named tables of records keyed by id) with the policy it is served under.

    `tables` maps a table name to {key: record}; its order is the domain's table order. `domain` is the
    `Domain` whose tools, invariants and identity rules apply.
    """

    def __init__(self, tables: Mapping[str, dict[str, BaseModel]], policy: str, name: str, domain: Domain) -> None:
        self._tables = dict(tables)
        self.policy = policy
        self.name = world_name(name)
        self.domain = domain
        self.directory: Path | None = None
        """The directory the world was read from, where its domain keeps more files beside it (None: built)."""
        self._fingerprint: str | None = None

    @property
    def table_names(self) -> tuple[str, ...]:
        return tuple(self._tables)

    @property
    def tools(self):
        """The domain's tool registry (what the agent may call in this world)."""
        return self.domain.tools

    @property
    def user_tools(self):
        """The tools the customer holds in this world (dual control), or None when the customer has none."""
        return self.domain.user_tools

    def side_of(self, requestor: str | None) -> str:
        """The side a gold action's requestor names: 'user' only where the customer holds tools (a domain without
        dual control runs every action as the agent's, as before requestors were read)."""
        return "user" if requestor == "user" and self.domain.user_tools is not None else "assistant"

    def tools_of(self, requestor: str | None):
        """The registry of the side that makes a call: the agent's ('assistant', None) or the customer's ('user')."""
        if requestor in (None, "assistant"):
            return self.domain.tools
        if requestor == "user":
            return self.domain.user_tools
        raise ValueError(f"unknown requestor {requestor!r}: expected 'assistant' or 'user'")

    def to_dict(self) -> dict:
        return {table: {k: dump_record(r) for k, r in recs.items()} for table, recs in self._tables.items()}

    @property
    def fingerprint(self) -> str:
        """Content hash of the base database (computed once, on first use)."""
        if self._fingerprint is None:
            self._fingerprint = sha256_json(self.to_dict())
        return self._fingerprint

    def altered(self, fields: Mapping[tuple[str, str, str], Any]) -> World:
        """This world with some records' fields set otherwise ((table, key, field) → value, validated as an
        assignment is): a counterfactual, to ask what a call does had a record been in another state, judged by
        the domain's rules against that state. Everything else is shared with this world."""
        out = copy.copy(self)
        out._tables, out._fingerprint = dict(self._tables), None
        for (table, key, name), value in fields.items():
            if out._tables[table] is self._tables[table]:
                out._tables[table] = dict(self._tables[table])
            record = out._tables[table][key].model_copy()
            setattr(record, name, value)
            out._tables[table][key] = record
        return out

    def table(self, name: str) -> dict[str, BaseModel]:
        if name not in self._tables:
            raise RecordError(f"unknown table {name!r}; tables are {sorted(self._tables)}")
        return self._tables[name]

    def query(self, table: str, where: Callable[[Any], bool] | dict[str, Any] | None = None) -> list[BaseModel]:
        """Records of `table` matching a predicate or a {dotted.field: value} filter, in id order."""
        records = self.table(table)
        if where is None:
            match: Callable[[Any], bool] = lambda r: True  # noqa: E731
        elif callable(where):
            match = where
        else:
            filters = dict(where)
            record_type = {**self.domain.tables, **self.domain.user_tables}.get(table)
            for path in filters:
                if record_type is not None and (problem := filter_field_problem(table, record_type, path)):
                    raise RecordError(problem)
            match = lambda r: all(_dotted(r, k) == v for k, v in filters.items())  # noqa: E731
        return [records[k] for k in sorted(records) if match(records[k])]

    def session(self, authenticated_user_id: str | None = None) -> Session:
        return Session(self, authenticated_user_id=authenticated_user_id)

    def start(self, task: Any, authenticated_user_id: str | None = None) -> Session | None:
        """A session already in `task`'s starting state, for a world whose episodes run elsewhere (an environment
        behind the protocol runs the set-up itself); None: the loop runs the task's set-up on a `session()`."""
        return None


def filter_field_problem(table: str, record_type: type[BaseModel], path: Any) -> str | None:
    """What is wrong with `path` as a {dotted.field: value} filter on `table`'s records, or None: every part must
    be a field its record type has (a dict's part is any key, then its values' fields); nothing is read past a
    list or a plain value. A filter on a field the records lack would match nothing or, compared with None, all."""
    if not isinstance(path, str) or not path:
        return f"filter field {path!r} on table {table!r}: expected a non-empty string (a field or dotted.field)"
    annotation: Any = record_type
    for depth, part in enumerate(path.split(".")):
        annotation = _one_type(annotation)
        where = ".".join(path.split(".")[:depth]) or None
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if part not in annotation.model_fields:
                fields = ", ".join(annotation.model_fields)
                inside = f"field {where!r} of " if where else ""
                return f"filter field {path!r}: {inside}table {table!r} has no field {part!r}; its fields are {fields}"
            annotation = annotation.model_fields[part].annotation
        elif get_origin(annotation) in (dict, Mapping):
            args = get_args(annotation)
            annotation = args[1] if len(args) == 2 else Any
        elif annotation is Any:
            return None
        else:
            kind = getattr(get_origin(annotation) or annotation, "__name__", str(annotation))
            return f"filter field {path!r} on table {table!r}: {where!r} is a {kind}; a filter reads nothing inside it"
    return None


def _one_type(annotation: Any) -> Any:
    """An optional field's type without its None; a union of several other types reads as Any."""
    if get_origin(annotation) in (Union, UnionType):
        others = [a for a in get_args(annotation) if a is not type(None)]
        return others[0] if len(others) == 1 else Any
    return annotation


def _dotted(record: Any, path: str) -> Any:
    value = record
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else getattr(value, part, None)
    return value


@dataclass
class ToolEvent:
    """One tool call as the world saw it: the world's own log, which the grader trusts."""

    step: int
    name: str
    arguments: dict
    kind: str  # a ToolKind: "read" | "write" | "identity" | "transfer" | "generic"
    ok: bool
    result: str | None = None
    error: str | None = None
    error_category: str | None = None  # invalid_arguments | not_found | precondition | unauthorized | transferred
    authenticated_user_id: str | None = None
    touched: list[tuple[str, str]] = field(default_factory=list)
    requestor: str = "assistant"  # the side that made the call: "assistant" (the agent) or "user" (the customer)

    @property
    def content(self) -> str:
        """What the agent sees: the result, or the refusal as an error message."""
        return cast(str, self.result) if self.ok else f"Error: {self.error}"  # a call that succeeded has a result

    def to_dict(self) -> dict:
        return {
            "step": self.step,
            "name": self.name,
            "arguments": self.arguments,
            "kind": self.kind,
            "ok": self.ok,
            "result": self.result,
            "error": self.error,
            "error_category": self.error_category,
            "authenticated_user_id": self.authenticated_user_id,
            "touched": [list(t) for t in self.touched],
        } | ({"requestor": self.requestor} if self.requestor != "assistant" else {})


class Session:
    """One episode's view of a world: base records plus a copy-on-write overlay."""

    def __init__(self, world: World, authenticated_user_id: str | None = None) -> None:
        self.world = world
        self.overlay: dict[str, dict[str, BaseModel]] = {t: {} for t in world.table_names}
        self.authenticated_user_id = authenticated_user_id
        # False: the tools skip their who-may-touch-what rule and the no-writes-after-a-transfer rule (τ²-bench's
        # tools have neither; its reward replays so).
        self.authorize = True
        self.log: list[ToolEvent] = []
        self.transferred = False  # set by a successful transfer call; later writes are refused (world.tools)
        self._journal: list[tuple[str, str, BaseModel | None]] | None = None
        self._edited_this_call: set[tuple[str, str]] = set()
        self.unusable: str | None = None  # why no call may run on it again (a call abandoned past its time bound)

    def check_usable(self) -> None:
        if self.unusable is not None:
            raise SessionUnusableError(f"this episode's session is not used again: {self.unusable}")

    # ---- reads -------------------------------------------------------------------------------
    def get(self, table: str, key: str) -> Any:
        """Current record (read-only by convention: call `edit` before changing anything)."""
        rec = self.overlay[table].get(key)
        return rec if rec is not None else self.world.table(table).get(key)

    def keys(self, table: str) -> list[str]:
        """Every key of a table as this episode sees it (base keys plus records the episode created)."""
        return sorted(set(self.world.table(table)) | set(self.overlay[table]))

    # ---- writes ------------------------------------------------------------------------------
    def edit(self, table: str, key: str) -> Any:
        """A private, mutable copy of a record, placed in the overlay (undone if the call fails)."""
        if (table, key) not in self._edited_this_call:
            self.check_usable()
            current = self.get(table, key)
            if current is None:
                raise RecordError(f"{table}/{key} does not exist")
            if self._journal is not None:
                self._journal.append((table, key, self.overlay[table].get(key)))
            self.overlay[table][key] = current.model_copy(deep=True)
            self._edited_this_call.add((table, key))
        return self.overlay[table][key]

    def create(self, table: str, key: str, record: BaseModel) -> BaseModel:
        """Add a new record (a booking); undone like an edit if the call fails."""
        self.check_usable()
        if self.get(table, key) is not None:
            raise RecordError(f"{table}/{key} already exists")
        if self._journal is not None:
            self._journal.append((table, key, None))
        self.overlay[table][key] = record
        self._edited_this_call.add((table, key))
        return record

    def begin_call(self) -> None:
        self._journal = []
        self._edited_this_call = set()

    def commit_call(self) -> list[tuple[str, str]]:
        touched = sorted(self._edited_this_call)
        self._journal = None
        self._edited_this_call = set()
        return touched

    def call_changes(self) -> tuple[dict[str, dict[str, dict]], dict[str, dict[str, dict]]]:
        """The records the call in progress touched, as `changed()` shows them, before and after the call: only
        records that differ from the base world appear (a record the call created is absent before)."""
        first: dict[tuple[str, str], BaseModel | None] = {}
        for table, key, previous in self._journal or []:
            first.setdefault((table, key), previous)
        before: dict[str, dict[str, dict]] = {t: {} for t in self.world.table_names}
        after: dict[str, dict[str, dict]] = {t: {} for t in self.world.table_names}
        for (table, key), previous in first.items():
            base = self.world.table(table).get(key)
            base_json = dump_record(base) if base is not None else None
            for side, record in (
                (before, base if previous is None else previous),
                (after, self.overlay[table].get(key)),
            ):
                if record is not None and dump_record(record) != base_json:
                    side[table][key] = dump_record(record)
        return before, after

    def rollback_call(self) -> None:
        for table, key, previous in reversed(self._journal or []):
            if previous is None:
                self.overlay[table].pop(key, None)
            else:
                self.overlay[table][key] = previous
        self._journal = None
        self._edited_this_call = set()

    # ---- state -------------------------------------------------------------------------------
    def changed(self) -> dict[str, dict[str, dict]]:
        """Full records (τ²-bench JSON) that differ from the base world, per table."""
        out: dict[str, dict[str, dict]] = {t: {} for t in self.world.table_names}
        for table, records in self.overlay.items():
            base = self.world.table(table)
            for key in sorted(records):
                now = dump_record(records[key])
                if key not in base or dump_record(base[key]) != now:
                    out[table][key] = now
        return out

    def state_hash(self) -> str:
        return sha256_json({"base": self.world.fingerprint, "changed": self.changed()})

    def environment_reward(self) -> float | None:
        """The environment's own score of this episode, where the episode runs in one (see `ProtocolSession`)."""
        return None
