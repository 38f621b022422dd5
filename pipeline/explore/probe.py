"""Explore by execution: call a domain's write tools as its customers would, in fresh sessions, and learn the
world model (`pipeline.explore.model.WorldModel`) from what the tools do.

Seeded (same world and seed, same model), cached per process by the world's fingerprint, and written as JSON by
`agentloop world explore`. Only the tool registry, `Domain.owner`, `World.query` and `execute` are used.
"""

from __future__ import annotations

import logging
import random
from collections import Counter, defaultdict
from typing import Any

from pipeline.explore.learn import Call, summarize
from pipeline.explore.model import ArgModel, TableModel, ToolModel, WorldModel
from pipeline.explore.repair import attempt
from pipeline.explore.shapes import MISSING, Ground, Shaper, resolve, singulars, structured
from pipeline.explore.values import candidates, examples, harvest, shared_values
from pipeline.world import World, domain_spec, dump_record, execute

log = logging.getLogger(__name__)
MAX_ENUMERATED = 12


class Explorer:
    """The world's tables, bindings and customers, and the calls that build its model."""

    def __init__(self, world: World, seed: int = 0) -> None:
        self.world, self.seed = world, seed
        self.domain = world.domain
        self.tables = {t: self._table(t) for t in world.table_names}
        self.customer_table = next((t for t, m in self.tables.items() if m.customers), None)
        self.customers = sorted(world.table(self.customer_table)) if self.customer_table else []
        self.owned: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for t in world.table_names:
            for r in world.query(t):
                who = self.domain.owner(t, r)
                if who is not None:
                    self.owned[who][t].append(self._key(t, r))
        self.by_key = {m.key_field: t for t, m in self.tables.items() if m.key_field}
        self.tools = {n: self._tool(n) for n in self.domain.tools.tools}
        self.shaper = Shaper(self)

    # ---- the static part: tables and tool bindings ---------------------------------------------------------
    def _key(self, table: str, record: Any) -> str:
        kf = self.tables[table].key_field if table in self.tables else None
        if kf:
            return str(getattr(record, kf))
        return next(k for k, r in self.world.table(table).items() if r is record)

    def _table(self, name: str) -> TableModel:
        recs = self.world.table(name)
        dumps = {k: dump_record(r) for k, r in recs.items()}
        first = next(iter(dumps.values()), {})
        key_field = next((f for f in first if all(d.get(f) == k for k, d in dumps.items())), None)
        owners = {k: self.domain.owner(name, r) for k, r in recs.items()}
        enumerated = {}
        for f, v in first.items():
            if isinstance(v, (dict, list)) or f == key_field:
                continue
            values = {d.get(f) for d in dumps.values() if not isinstance(d.get(f), (dict, list))}
            if len(values) <= MAX_ENUMERATED and len(values) < max(2, len(dumps)):
                enumerated[f] = sorted(values, key=lambda x: (x is None, str(x)))
        return TableModel(
            key_field=key_field,
            records=len(recs),
            private=any(o is not None for o in owners.values()),
            customers=bool(owners) and all(o == k for k, o in owners.items()),
            enumerated=enumerated,
        )

    def _tool(self, name: str) -> ToolModel:
        spec = self.domain.tools[name]
        params = spec.json_schema()["function"]["parameters"]
        props, defs = params.get("properties", {}), params.get("$defs", {})
        args = {}
        for a, schema in props.items():
            if structured(schema, defs):
                args[a] = self._structured(a, resolve(schema, defs), defs, props)
            elif a in self.by_key:
                args[a] = ArgModel(binds="key", table=self.by_key[a])
            elif "enum" in schema:
                args[a] = ArgModel(binds="enum", values=list(schema["enum"]))
            elif examples(schema.get("description")):
                args[a] = ArgModel(binds="example", values=examples(schema.get("description")))
            else:
                args[a] = ArgModel(binds="field")
        keys = [m.table for m in args.values() if m.binds == "key"]
        reads = keys[0] if spec.kind in ("read", "identity") and len(keys) == 1 else None
        return ToolModel(kind=spec.kind, description=spec.description, args=args, reads=reads)

    def _structured(self, name: str, schema: dict, defs: dict, props: dict) -> ArgModel:
        """How an array or object argument is formed (`pipeline.explore.shapes`)."""
        base = name.removeprefix("new_")
        if base != name and base in props:
            return ArgModel(binds="pair", of=base)
        items = resolve(schema.get("items", {}), defs) if schema.get("type") == "array" else schema
        if items.get("type") == "object":
            fields = list(items.get("properties", {}))
            return ArgModel(binds="object", fields=fields, table=next((self.by_key[f] for f in fields
                                                                      if f in self.by_key), None))  # fmt: skip
        single = next((s for s in singulars(name) if s in self.by_key), singulars(name)[0])
        return ArgModel(binds="items", of=single, table=self.by_key.get(single))

    def subject(self, tool: str) -> tuple[str | None, str | None]:
        """The argument naming the record a write is about: a key of a private table (or a list of such keys, the
        records a write about several names), the customer's last, a list after a single key."""
        args = self.tools[tool].args
        keyed = [(a, m.table) for a, m in args.items() if m.binds in ("key", "items") and m.table is not None]
        private = [x for x in keyed if self.tables[x[1]].private]
        ranked = sorted(private, key=lambda x: (x[1] == self.customer_table, args[x[0]].binds == "items"))
        return ranked[0] if ranked else (None, None)

    def many(self, tool: str) -> bool:
        """Whether the write's subject is a list of keys (a write about several records)."""
        subject, _ = self.subject(tool)
        return subject is not None and self.tools[tool].args[subject].binds == "items"

    def records_of(self, user: str) -> list[dict]:
        return [dump_record(self.world.table(t)[k]) for t, keys in self.owned.get(user, {}).items() for k in keys]

    # ---- calls ---------------------------------------------------------------------------------------------
    def arguments(self, tool: str, user: str, subject_key: str | None, rng: random.Random) -> dict | None:
        """One argument set for `tool` as `user` would ask for it, about `subject_key`; None if one is unknown."""
        spec = self.domain.tools[tool]
        params = spec.json_schema()["function"]["parameters"]
        props, defs, required = params.get("properties", {}), params.get("$defs", {}), set(params.get("required", []))
        subject, _ = self.subject(tool)
        referenced = self._referenced(subject_key, tool)
        found = harvest(self.records_of(user) + referenced)
        ground = Ground(referenced[0] if referenced else None, self.records_of(user), subject_key, found)
        args: dict[str, Any] = {}
        for a, m in self.tools[tool].args.items():
            if a == subject:
                args[a] = [subject_key] if m.binds == "items" else subject_key
                continue
            if m.binds in ("items", "pair", "object"):
                value = self.shaper.value(a, props[a], defs, ground, args, rng)
                if value is MISSING and a in required:
                    return None
                if value is not MISSING:
                    args[a] = value
                continue
            if m.binds == "key" and m.table is not None:  # a key argument always names its table
                own = self.owned.get(user, {}).get(m.table, [])
                public = [] if self.tables[m.table].private else self.spread(m.table, ground.subject, rng)
                pool = [user] if m.table == self.customer_table else own or public  # never another's record
                if not pool:
                    return None
                args[a] = rng.choice(pool)
                continue
            annotation = spec.args_model.model_fields[a].annotation
            shared = shared_values(self.world, a)
            values = candidates(annotation, props[a], props[a].get("description"), found.get(a, []), rng, shared)
            if not values:
                if a in required:
                    return None
                continue
            args[a] = rng.choice(values[:6])
        return args

    def spread(self, table: str, about: dict | None, rng: random.Random) -> list[str]:
        """Keys of a table no customer owns to draw from, over all its records (never its first few): half the
        time those sharing a value with the record the call is about (a slot of the appointment's stylist)."""
        keys = sorted(self.world.table(table))
        if about and rng.random() < 0.5:
            shared = {(f, v) for f, v in about.items() if not isinstance(v, (dict, list, bool)) and f in
                      self.tables[table].enumerated}  # fmt: skip
            related = [k for k in keys if shared & set(dump_record(self.world.table(table)[k]).items())]
            return related or keys
        return keys

    def _referenced(self, key: str | None, tool: str) -> list[dict]:
        _, table = self.subject(tool)
        if key is None or table is None:
            return []
        rec = self.world.table(table).get(key)
        return [dump_record(rec)] if rec is not None else []

    def call(self, tool: str, user: str, arguments: dict, state: dict[tuple[str, str, str], Any] | None = None) -> Call:
        """Run the call as the customer in a fresh session; with `state` ((table, key, field) → value), in the world
        with those fields set otherwise (`World.altered`), so a contrast can ask what the call does had a record been
        in another state."""
        world = self.world.altered(state) if state else self.world
        subject, table = self.subject(tool)
        keys = _keys(arguments.get(subject)) if subject else []
        recs = [r for k in keys if table and (r := world.table(table).get(k)) is not None]
        own = table is None or all(self.domain.owner(table, r) in (None, user) for r in recs)
        session = world.session(authenticated_user_id=user)
        event = execute(session, tool, arguments)
        out = Call(tool, user, arguments, keys[0] if keys else None, own, dump_record(recs[0]) if recs else None,
                   event.ok, event.error, event.error_category)  # fmt: skip
        for a, m in self.tools[tool].args.items():
            if m.binds in ("key", "items") and m.table is not None:
                base = world.table(m.table)
                named = [(k, dump_record(base[k])) for k in _keys(arguments.get(a)) if k in base]
                if named:
                    out.named[a] = named
                    out.named.update(self._referred(a, m.table, named))
        if event.ok:
            for t, changed in session.changed().items():
                base = world.table(t)
                for k, after in changed.items():
                    before = dump_record(base[k]) if k in base else {}
                    for f in after:
                        if before.get(f) != after[f]:
                            out.changes.append((t, k, f, before.get(f), after[f], k not in base))
        return out

    def _referred(self, arg: str, table: str, named: list[tuple[str, dict]]) -> dict[str, list[tuple[str, dict]]]:
        """The records the named records refer to by another table's key ('<arg>.<field>': a bill's meter)."""
        out: dict[str, list[tuple[str, dict]]] = defaultdict(list)
        for _, rec in named:
            for f, v in rec.items():
                other = self.by_key.get(f)
                if other is not None and other != table and isinstance(v, str) and v in self.world.table(other):
                    out[f"{arg}.{f}"].append((v, dump_record(self.world.table(other)[v])))
        return out

    def explore_tool(self, tool: str, rng: random.Random, n_customers: int, per_record: int) -> list[Call]:
        subject, table = self.subject(tool)
        calls: list[Call] = []
        users = rng.sample(self.customers, min(n_customers, len(self.customers)))
        for user in users:
            if table is None or table == self.customer_table:
                keys: list[str | None] = [user] if table else [None]
            else:
                own = sorted(self.owned.get(user, {}).get(table, []))
                keys = rng.sample(own, min(4, len(own)))
            for key in keys:
                for _ in range(per_record):
                    calls += attempt(self, tool, user, key, rng) or []
            others = [u for u in self.customers if u != user]
            if table is not None and others:
                other = rng.choice(others)
                pool = [other] if table == self.customer_table else self.owned.get(other, {}).get(table, [])
                if pool:
                    args = self.arguments(tool, user, rng.choice(sorted(pool)), rng)
                    if args is not None:
                        calls.append(self.call(tool, user, args))
        return calls


def _keys(value: Any) -> list[str]:
    """The keys an argument names: one for a key, each for a list of keys."""
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return [value] if isinstance(value, str) else []


def explore(world: World, seed: int = 0, customers: int = 24, per_record: int = 3) -> WorldModel:
    """The world model of `world`, learned by calling each write tool as `customers` sampled customers."""
    ex = Explorer(world, seed)
    writes, unexplored = {}, {}
    for tool in sorted(world.domain.tools.of_kind("write")):
        rng = random.Random(f"explore:{world.fingerprint}:{seed}:{tool}")
        calls = ex.explore_tool(tool, rng, customers, per_record)
        writes[tool] = summarize(ex, tool, calls)
        if not writes[tool].ok:
            errors = Counter(c.error for c in calls if c.error)
            unexplored[tool] = (
                f"no call succeeded in {len(calls)}; most common refusal: {errors.most_common(1)[0][0]}"
                if errors
                else "no argument set could be formed from the customers' records"
            )
    identity = {n: list(t.args) for n, t in ex.tools.items() if t.kind == "identity"}
    return WorldModel(
        domain=world.domain.name,
        world=world.name,
        fingerprint=world.fingerprint,
        seed=seed,
        customer_table=ex.customer_table,
        identity={n: ", ".join(a) for n, a in identity.items()},
        tables=ex.tables,
        tools=ex.tools,
        writes=writes,
        unexplored=unexplored,
    )


_CACHE: dict[tuple[str, str, str, int], WorldModel] = {}


def world_model(world: World, seed: int = 0) -> WorldModel:
    """`explore(world, seed)`, once per process per world content and seed."""
    key = (domain_spec(world.domain), world.name, world.fingerprint, seed)
    if key not in _CACHE:
        _CACHE[key] = explore(world, seed)
    return _CACHE[key]
