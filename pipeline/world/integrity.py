"""A world's records checked for what its data model says but a record's schema alone cannot: every record's owner
and every reference to another table's key names a record the world holds, and no amount of money is negative.

Read generically from the domain: the owner is `Domain.owner`; a table's key field is the field equal to the
record's key in every record, and a field of another table under that name (not a generic one such as `id` or
`name`), at any depth, most of whose values are its keys, refers to it (a reservation's `user_id`, an order item's
`product_id`); a money field is a number whose name says what something costs (`price`, `fee`, `fare`, `cost`), at
any depth, unless its name says it is a difference
(`exchange_price_difference`). A τ²-bench database with a reservation owned by nobody or a negative price would
otherwise load, and every task touching the record would grade an agent against data no policy describes.
`load_world` and the τ²-bench importers check every world they read (an environment behind the protocol is its
own judge and is not checked).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

from pipeline.world.tables import World, WorldLoadError, dump_record

log = logging.getLogger(__name__)

MONEY = re.compile(r"(^|_)(price|cost|fee|fare)s?($|_)")
"""A field named as what something costs (a whole word of its snake_case name). A payment's `amount` or a
balance is not one: a refund is recorded as a negative payment, and an account may owe."""
SIGNED = re.compile(r"(^|_)(difference|diff|delta|change|adjustment|net)s?($|_)")
"""An amount that is a difference, and so may be negative (an exchange's price difference)."""
GENERIC = frozenset({"id", "key", "name", "code", "title", "type", "kind", "status"})
"""Key field names too common to say a field of another table refers to that table."""
SHOWN = 5


class IntegrityError(WorldLoadError):
    """Records that break the data model: an owner or a reference to no record, a negative amount of money."""


def key_field(world: World, table: str) -> str | None:
    """The field every record of `table` holds its own key in, if one does."""
    records = world.table(table)
    if not records:
        return None
    dumps = [(str(k), dump_record(r)) for k, r in records.items()]
    fields = set(dumps[0][1])
    for key, data in dumps:
        fields = {f for f in fields if str(data.get(f)) == key}
    return min(fields) if fields else None


def _scalars(value: Any, path: str = "") -> Iterator[tuple[str, str, Any]]:
    """(path, field name, value) of every text or number under `value`, at any depth."""
    if isinstance(value, dict):
        for k, v in value.items():
            sub = f"{path}.{k}" if path else str(k)
            if isinstance(v, (dict, list)):
                yield from _scalars(v, sub)
            elif isinstance(v, (str, int, float)) and not isinstance(v, bool):
                yield sub, str(k), v
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, (dict, list)):
                yield from _scalars(v, f"{path}.{i}")


def integrity_problems(world: World) -> list[str]:
    """Every record that breaks the data model, one line each: 'table T, record K: field F: what'."""
    names = list(world.domain.tables)
    keys = {t: {str(k) for k in world.table(t)} for t in names}
    every = set().union(*keys.values()) if keys else set()
    referred = {f: t for t in names if (f := key_field(world, t)) is not None and f not in GENERIC}
    scalars = {t: {k: list(_scalars(dump_record(r))) for k, r in world.table(t).items()} for t in names}
    out: list[str] = []
    for table in names:
        own = next((f for f, t in referred.items() if t == table), None)
        refs = _references(scalars[table], referred, keys, own)
        for key, record in world.table(table).items():
            where = f"table {table}, record {key!r}"
            try:
                owner = world.domain.owner(table, record)
            except Exception as exc:  # noqa: BLE001 - the domain's own code, named rather than a traceback
                out.append(f"{where}: Domain.owner failed: {type(exc).__name__}: {exc}")
                continue
            flagged: set[str] = set()
            if owner is not None and str(owner) not in every:
                field = next((f for f, _, v in scalars[table][key] if v == owner and "." not in f), "owner")
                flagged.add(field)
                out.append(f"{where}: field {field}: owner {owner!r} is no record of the world")
            for path, name, value in scalars[table][key]:
                target = refs.get(name)
                if target is not None and path not in flagged and str(value) not in keys[target]:
                    out.append(f"{where}: field {path}: refers to {target} {value!r}, which the world does not hold")
                if isinstance(value, (int, float)) and value < 0 and MONEY.search(name) and not SIGNED.search(name):
                    out.append(f"{where}: field {path}: negative {name} {value:g}")
    return out


def _references(records: dict, referred: dict[str, str], keys: dict[str, set[str]], own: str | None) -> dict[str, str]:
    """The fields of one table that refer to another table's records: named as that table's key field, and most
    of their values are its keys (a field that only shares the name is no reference)."""
    values: dict[str, list[str]] = {}
    for fields in records.values():
        for _, name, value in fields:
            if name in referred and name != own and not isinstance(value, float):
                values.setdefault(name, []).append(str(value))
    return {
        name: referred[name]
        for name, seen in values.items()
        if 2 * sum(v in keys[referred[name]] for v in seen) >= len(seen)
    }


def check_integrity(world: World, source: str | None = None) -> None:
    """Raise IntegrityError naming the first problems of `world` (see `integrity_problems`)."""
    problems = integrity_problems(world)
    if problems:
        more = f" (and {len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
        raise IntegrityError(f"{source or world.name}: {'; '.join(problems[:SHOWN])}{more}")
