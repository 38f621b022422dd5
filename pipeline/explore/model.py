"""The world model: what running a domain's tools taught about it, as inspectable JSON.

Built by `pipeline.explore.probe.explore` from the tool schemas, kinds and docstrings, the tables (read through
`World.query`) and calls made in fresh sessions — never from the domain's code. Per write tool it says which
records its arguments name, what a successful call changes, and when the tool refuses and why, the refusals
grouped into preconditions on record fields (kept only when contrast confirms them, `pipeline.explore.contrast`)
or on an argument compared with the record's field of that name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from pipeline.outputs import atomic_write
from pipeline.strict import Strict


class TableModel(Strict):
    key_field: str | None = Field(description="The record field that always equals the record's key, if any.")
    records: int
    private: bool = Field(description="Some record belongs to a customer (`Domain.owner`).")
    customers: bool = Field(default=False, description="Each record is owned by the customer it is keyed by.")
    enumerated: dict[str, list[Any]] = Field(
        default_factory=dict, description="Top-level scalar fields with few distinct values, and those values."
    )


class ArgModel(Strict):
    binds: Literal["key", "enum", "field", "example", "free", "items", "pair", "object"] = Field(
        description="key: a key of `table`; enum: one of `values` (schema); field: values of the same-named field"
        " in the customer's records; example: the docstring's example, varied; free: nothing known; items: a list"
        " of values of field `of` nested in the record the call is about (of keys of `table` when `of` is its key);"
        " pair: for each value of argument `of`,"
        " another value of its field from a collection holding it; object: objects (or lists of them) composed"
        " of `fields`, keyed into `table` where a field is a table's key."
    )
    table: str | None = None
    values: list[Any] = Field(default_factory=list, description="Enumerated values, or the docstring's examples.")
    of: str | None = Field(default=None, description="items: the element's field name; pair: the paired argument.")
    fields: list[str] = Field(default_factory=list, description="object: the fields of each object.")


class ToolModel(Strict):
    kind: str
    description: str
    args: dict[str, ArgModel]
    reads: str | None = Field(default=None, description="The table whose record the tool looks up by key.")


class Effect(Strict):
    table: str
    field: str
    calls: int = Field(description="Successful calls that changed this field.")
    transitions: list[list[Any]] = Field(default_factory=list, description="[before, after] pairs seen (scalars).")
    set_from: str | None = Field(default=None, description="The argument whose value the field takes, always.")
    created: bool = Field(default=False, description="The record was created by the call.")


class Precondition(Strict):
    """What held for every refused call of a group and for no successful call."""

    kind: Literal["field", "compare", "owner"]
    field: str | None = None
    on: str | None = Field(
        default=None,
        description="field: the key argument naming the record (None: the subject); '<argument>.<field>': the"
        " record the named one refers to by that field (another table's key: a bill's meter).",
    )
    values: list[Any] = Field(default_factory=list, description="field: the refused record's values.")
    allowed: list[Any] = Field(default_factory=list, description="field: the values seen on successful calls.")
    relation: Literal["<", "=", ">", "!="] | None = Field(
        default=None, description="compare: argument vs record field."
    )

    def describe(self) -> str:
        if self.kind == "owner":
            return "the record belongs to another customer"
        if self.kind == "compare":
            return f"the new {self.field} {self.relation} the current {self.field}"
        where = "the " + "".join(f"{p.replace('_', ' ')}'s " for p in self.on.split(".")) if self.on else ""
        values, allowed = " or ".join(map(str, self.values)), ", ".join(map(str, self.allowed))
        return f"{where}{self.field} is {values} (allowed: {allowed})"


class Recipe(Strict):
    """A refused call the explorer made: who made it and with which arguments (re-run to ask for the group)."""

    user: str
    arguments: dict[str, Any]


RECIPES = 4
"""Refused calls kept per refusal group."""


class RefusalGroup(Strict):
    name: str = Field(description="Stable name within the tool: '<category>_<n>'.")
    category: str
    pattern: str = Field(description="The refusal message with ids and values replaced by placeholders.")
    calls: int
    example: str
    precondition: Precondition | None = Field(default=None, description="None: no record field explains it.")
    recipes: list[Recipe] = Field(
        default_factory=list, description=f"Up to {RECIPES} of the group's refused calls, of different customers first."
    )


class WriteModel(Strict):
    subject: str | None = Field(
        description="The argument naming the record the call is about: a table key, or a list of keys (a write"
        " about several records)."
    )
    subject_table: str | None = None
    calls: int
    ok: int
    effects: list[Effect] = Field(default_factory=list)
    refusals: list[RefusalGroup] = Field(default_factory=list)
    allowed_when: dict[str, list[Any]] = Field(
        default_factory=dict,
        description="Field a refusal reads → values seen on successful calls: the subject's field, or"
        " '<on>.<field>' for another record's (`Precondition.on`).",
    )
    ok_states: dict[str, list[Any]] = Field(
        default_factory=dict,
        description="Enumerated field of the subject's table → the values its records had on successful calls.",
    )


class WorldModel(Strict):
    domain: str
    world: str
    fingerprint: str
    seed: int
    customer_table: str | None
    identity: dict[str, str] = Field(
        default_factory=dict, description="Identity tool → its arguments (what the customer states to be identified)."
    )
    tables: dict[str, TableModel]
    tools: dict[str, ToolModel]
    writes: dict[str, WriteModel]
    unexplored: dict[str, str] = Field(default_factory=dict, description="Write tool → why no call succeeded.")

    def write(self, path: str | Path) -> Path:
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(out, self.model_dump_json(indent=2) + "\n")
        return out

    @classmethod
    def read(cls, path: str | Path) -> WorldModel:
        return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))

    def coverage(self) -> dict[str, Any]:
        """Write tools with a successful call, refusal groups with a precondition, per write tool."""
        return {
            name: {
                "ok": w.ok > 0,
                "refusals": len(w.refusals),
                "explained": sum(r.precondition is not None for r in w.refusals),
            }
            for name, w in self.writes.items()
        }
