"""Structured argument values, formed from an argument's JSON schema and the customer's records.

An argument that is an array or an object is formed part by part, each part grounded in the world:

- a list of scalars named for a field (`item_ids` → `item_id`, `flights` → `flight`): one or two values of that
  field found nested in the record the call is about (an order's items), else in the customer's own records, else
  (a list of a table's keys, `slot_ids`) one key drawn over all that table's records;
- `new_<arg>` beside `<arg>` (position by position): for each old value, another value of the same field in a
  collection that holds the old one, in a record other than the one the call is about (a product's variants);
- a list of objects: the same-named list found in the customer's records, cut down to the schema's fields, or
  one or two objects composed field by field;
- an object: fields that are keys of a table (`flight_number`) first, then the rest from the records those keys
  name (a field `date` takes the keys of the named record's mapping `dates`), ids from mappings of the customer's
  records whose name shares the id's stem (`payment_id` → the keys of `payment_methods`), enumerations from the
  schema, other values under the same name in the customer's records.

What the tool accepts is left to execution (`pipeline.explore.repair` adjusts amounts a refusal names).
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipeline.explore.values import harvest
from pipeline.world import dump_record

if TYPE_CHECKING:
    from pipeline.explore.probe import Explorer

MISSING = object()
"""No value could be formed."""


def resolve(schema: dict, defs: dict) -> dict:
    """The schema with a `$ref` followed and an optional (`anyOf` with null) reduced to its type."""
    if "$ref" in schema:
        schema = {**defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), **{k: v for k, v in schema.items() if k != "$ref"}}
    options = [s for s in schema.get("anyOf", []) if s.get("type") != "null"]
    if len(options) == 1:
        schema = {**resolve(options[0], defs), **{k: v for k, v in schema.items() if k != "anyOf"}}
    return schema


def structured(schema: dict, defs: dict) -> bool:
    return resolve(schema, defs).get("type") in ("array", "object")


def singulars(name: str) -> list[str]:
    """The field names one element of a list argument named `name` goes by: item_ids → item_id."""
    out = []
    if name.endswith("ies"):
        out.append(name[:-3] + "y")
    if name.endswith("es"):
        out.append(name[:-2])
    if name.endswith("s"):
        out.append(name[:-1])
    return out or [name]


def nested(record: Any, name: str) -> list[Any]:
    """Every scalar value under field `name` anywhere in a record, first seen first."""
    return [v for v in harvest([record]).get(name, []) if not isinstance(v, (dict, list))]


@dataclass
class Ground:
    """What a call is formed from: the record it is about, the customer's records, the values under each name."""

    subject: dict | None
    records: list[dict]
    subject_key: str | None = None
    found: dict[str, list[Any]] = field(default_factory=dict)


class Shaper:
    """Forms structured argument values for one world (an explorer's tables and customers)."""

    def __init__(self, ex: Explorer) -> None:
        self.ex = ex
        self._siblings: dict[str, dict[Any, list[tuple[str, str, list]]]] = {}

    def siblings(self, name: str, value: Any, besides: str | None) -> list[Any]:
        """Other values of field `name` in the collections (lists or mappings of objects) holding `value`, in
        records other than `besides` (the record a call is about)."""
        if name not in self._siblings:
            index: dict[Any, list[tuple[str, str, list]]] = defaultdict(list)
            for t in self.ex.world.table_names:
                for k, r in self.ex.world.table(t).items():
                    for group in _collections(dump_record(r), name):
                        for v in group:
                            index[v].append((t, k, group))
            self._siblings[name] = index
        out: list[Any] = []
        for _t, k, group in self._siblings[name].get(value, []):
            if k == besides:
                continue
            out += [v for v in group if v != value and v not in out]
        return out

    def value(self, name: str, schema: dict, defs: dict, g: Ground, formed: dict, rng: random.Random) -> Any:
        s = resolve(schema, defs)
        if s.get("type") == "object":
            return self.compose(s, defs, g, rng)
        items = resolve(s.get("items", {}), defs)
        base = name.removeprefix("new_")
        if base != name and isinstance(formed.get(base), list):
            return self.paired(singulars(base), formed[base], g, rng)
        if items.get("type") == "object":
            return self.objects(name, items, defs, g, rng)
        for single in singulars(name):
            pool = nested(g.subject, single) if g.subject else []
            pool = pool or list(dict.fromkeys(v for r in g.records for v in nested(r, single)))
            if pool:
                return rng.sample(pool, rng.choice([1, 1, 2]) if len(pool) > 1 else 1)
        lists = [v for v in g.found.get(name, []) if isinstance(v, list) and v]
        if lists:
            return rng.choice(lists)
        table = next((self.ex.by_key[s] for s in singulars(name) if s in self.ex.by_key), None)
        if table is not None:  # keys of a table nobody's records list: drawn over all its records
            return [rng.choice(self.ex.spread(table, g.subject, rng))]
        return MISSING

    def paired(self, names: list[str], old: list, g: Ground, rng: random.Random) -> Any:
        """A replacement for each old value: another value of its field in a collection that holds it."""
        besides = g.subject_key
        out = []
        for v in old:
            pool = next((p for n in names if (p := self.siblings(n, v, besides))), [])
            if not pool:
                return MISSING
            out.append(rng.choice(pool))
        return out

    def objects(self, name: str, items: dict, defs: dict, g: Ground, rng: random.Random) -> Any:
        fields = set(items.get("properties", {}))
        seen = [[{k: x[k] for k in x if k in fields} for x in v if isinstance(x, dict)]  # the record's order
                for v in g.found.get(name, []) if isinstance(v, list) and v]  # fmt: skip
        seen = [v for v in seen if all(set(x) == fields for x in v)]
        if seen and rng.random() < 0.5:
            return rng.choice(seen)
        made = [self.compose(items, defs, g, rng) for _ in range(rng.choice([1, 1, 2]))]
        made = [m for m in made if m is not MISSING]
        return made or (rng.choice(seen) if seen else MISSING)

    def compose(self, s: dict, defs: dict, g: Ground, rng: random.Random) -> Any:
        """One object: key fields first, then the others from the records the keys name and the customer's."""
        props = s.get("properties", {})
        out: dict[str, Any] = {}
        named: list[dict] = []
        for f in sorted(props, key=lambda f: f not in self.ex.by_key):
            sub = resolve(props[f], defs)
            v = self._field(f, sub, defs, g, named, rng)
            if v is MISSING:
                if f in s.get("required", []):
                    return MISSING
                continue
            out[f] = v
            table = self.ex.by_key.get(f)
            if table is not None and (rec := self.ex.world.table(table).get(v)) is not None:
                named.append(dump_record(rec))
        return {f: out[f] for f in props if f in out}

    def _field(self, f: str, s: dict, defs: dict, g: Ground, named: list[dict], rng: random.Random) -> Any:
        if "enum" in s:
            return rng.choice(s["enum"])
        if s.get("type") in ("array", "object"):
            return self.value(f, s, defs, g, {}, rng)
        table = self.ex.by_key.get(f)
        if table is not None:
            own = [v for v in g.found.get(f, []) if v in self.ex.world.table(table)]
            return rng.choice(own) if own and rng.random() < 0.5 else rng.choice(sorted(self.ex.world.table(table)))
        for rec in named:  # a field of the named record, or a key of its mapping named for it
            pool = nested(rec, f) or [k for p in _plurals(f) if isinstance(rec.get(p), dict) for k in rec[p]]
            if pool:
                return rng.choice(pool)
        if f.endswith("_id"):
            stem = f.removesuffix("_id")
            keys = [k for r in g.records for n, m in r.items() if n.startswith(stem) and isinstance(m, dict)
                    and all(isinstance(x, dict) for x in m.values()) for k in m]  # fmt: skip
            if keys:
                return rng.choice(list(dict.fromkeys(keys)) + _scalars(g, f))
        pool = _scalars(g, f)
        return rng.choice(pool) if pool else MISSING


def _scalars(g: Ground, name: str) -> list[Any]:
    return [v for v in g.found.get(name, []) if not isinstance(v, (dict, list))]


def _plurals(name: str) -> list[str]:
    return [name + "s", name + "es", name[:-1] + "ies" if name.endswith("y") else name + "s"]


def _collections(obj: Any, name: str) -> list[list]:
    """The values of field `name` in every list or mapping of objects within `obj` that has it."""
    out: list[list] = []

    def walk(o: Any) -> None:
        elements = list(o.values()) if isinstance(o, dict) else o if isinstance(o, list) else []
        objs = [e for e in elements if isinstance(e, dict)]
        if objs and len(objs) == len(elements) and any(name in e for e in objs):
            out.append([e[name] for e in objs if name in e and not isinstance(e[name], (dict, list))])
        for e in elements:
            walk(e)

    walk(obj)
    return out
