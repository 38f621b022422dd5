"""The base world and copy-on-write episode sessions over it.

A `RetailWorld` is parsed once and never mutated. Each episode gets a `Session` whose writes land in a
small overlay of copied records, so starting an episode costs nothing and an episode's writes never reach
the base world or another episode. The episode's state is the set of records that differ from the base.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pipeline.world.retail.schema import TABLES, Order, Product, Record, RetailDB, User, dump_record


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the form every hash in agentloop is taken over."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_json(obj: Any) -> str:
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()


class WorldLoadError(ValueError):
    """A database file that does not fit the schema; the message names the file and the field."""


class RetailWorld:
    """An immutable retail database with look-up indexes and the policy it is served under."""

    def __init__(self, db: RetailDB, policy: str = "", name: str = "retail") -> None:
        self.db = db
        self.policy = policy
        self.name = name
        self._fingerprint: str | None = None
        self.user_by_email = {u.email.lower(): uid for uid, u in db.users.items()}
        self.user_by_name_zip = {
            (u.name.first_name.lower(), u.name.last_name.lower(), u.address.zip): uid for uid, u in db.users.items()
        }
        self.product_by_item = {item_id: pid for pid, p in db.products.items() for item_id in p.variants}

    @classmethod
    def from_dict(cls, data: dict, policy: str = "", name: str = "retail", source: str = "<dict>") -> RetailWorld:
        try:
            db = RetailDB.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise WorldLoadError(f"{source}: field {where}: {err['msg']}") from None
        return cls(db, policy=policy, name=name)

    @classmethod
    def from_json(cls, path: str | Path, policy: str = "", name: str | None = None) -> RetailWorld:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise WorldLoadError(f"{path}: file not found") from None
        except json.JSONDecodeError as exc:
            raise WorldLoadError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
        return cls.from_dict(data, policy=policy, name=name or path.parent.name, source=str(path))

    def to_dict(self) -> dict:
        return {table: {k: dump_record(r) for k, r in getattr(self.db, table).items()} for table in TABLES}

    @property
    def fingerprint(self) -> str:
        """Content hash of the base database (computed once, on first use)."""
        if self._fingerprint is None:
            self._fingerprint = sha256_json(self.to_dict())
        return self._fingerprint

    def table(self, name: str) -> dict[str, Record]:
        if name not in TABLES:
            raise KeyError(f"unknown table {name!r}; tables are {sorted(TABLES)}")
        return getattr(self.db, name)

    def query(self, table: str, where: Callable[[Record], bool] | dict[str, Any] | None = None) -> list[Record]:
        """Records of `table` matching a predicate or a {dotted.field: value} filter, in id order."""
        records = self.table(table)
        if where is None:
            match: Callable[[Record], bool] = lambda r: True  # noqa: E731
        elif callable(where):
            match = where
        else:
            filters = dict(where)
            match = lambda r: all(_dotted(r, k) == v for k, v in filters.items())  # noqa: E731
        return [records[k] for k in sorted(records) if match(records[k])]

    def session(self, authenticated_user_id: str | None = None) -> Session:
        return Session(self, authenticated_user_id=authenticated_user_id)


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
    kind: str  # "read" | "write" | "generic"
    ok: bool
    result: str | None = None
    error: str | None = None
    error_category: str | None = None  # invalid_arguments | not_found | precondition | unauthorized
    authenticated_user_id: str | None = None
    touched: list[tuple[str, str]] = field(default_factory=list)

    @property
    def content(self) -> str:
        """What the agent sees: the result, or the refusal as an error message."""
        return self.result if self.ok else f"Error: {self.error}"

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
        }


class Session:
    """One episode's view of a world: base records plus a copy-on-write overlay."""

    def __init__(self, world: RetailWorld, authenticated_user_id: str | None = None) -> None:
        self.world = world
        self.overlay: dict[str, dict[str, Record]] = {t: {} for t in TABLES}
        self.authenticated_user_id = authenticated_user_id
        self.log: list[ToolEvent] = []
        self.transferred = False
        self._journal: list[tuple[str, str, Record | None]] | None = None
        self._edited_this_call: set[tuple[str, str]] = set()

    # ---- reads -------------------------------------------------------------------------------
    def get(self, table: str, key: str) -> Record | None:
        """Current record (read-only by convention: call `edit` before changing anything)."""
        rec = self.overlay[table].get(key)
        return rec if rec is not None else self.world.table(table).get(key)

    def user(self, user_id: str) -> User | None:
        return self.get("users", user_id)  # type: ignore[return-value]

    def order(self, order_id: str) -> Order | None:
        return self.get("orders", order_id)  # type: ignore[return-value]

    def product(self, product_id: str) -> Product | None:
        return self.get("products", product_id)  # type: ignore[return-value]

    # ---- writes ------------------------------------------------------------------------------
    def edit(self, table: str, key: str) -> Record:
        """A private, mutable copy of a record, placed in the overlay (undone if the call fails)."""
        if (table, key) not in self._edited_this_call:
            current = self.get(table, key)
            if current is None:
                raise KeyError(f"{table}/{key} does not exist")
            if self._journal is not None:
                self._journal.append((table, key, self.overlay[table].get(key)))
            self.overlay[table][key] = current.model_copy(deep=True)
            self._edited_this_call.add((table, key))
        return self.overlay[table][key]

    def begin_call(self) -> None:
        self._journal = []
        self._edited_this_call = set()

    def commit_call(self) -> list[tuple[str, str]]:
        touched = sorted(self._edited_this_call)
        self._journal = None
        self._edited_this_call = set()
        return touched

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
        out: dict[str, dict[str, dict]] = {t: {} for t in TABLES}
        for table, records in self.overlay.items():
            base = self.world.table(table)
            for key in sorted(records):
                now = dump_record(records[key])
                if key not in base or dump_record(base[key]) != now:
                    out[table][key] = now
        return out

    def state_hash(self) -> str:
        return sha256_json({"base": self.world.fingerprint, "changed": self.changed()})
