"""A world's records checked for what its data model says but a record's schema alone cannot: every record's owner
and every reference to another table's key names a record the world holds, and no amount of money is negative.

Read generically from the domain: the owner is `Domain.owner`; a table's key field is the field equal to the
record's key in every record, and a field of another table under that name, at any depth, refers to it (a
reservation's `user_id`, an order item's `product_id`); a money field is a number whose name says what something
costs (`price`, `fee`, `fare`, `cost`), at any depth, unless its name says it is a difference
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
    referred = {f: t for t in names if (f := key_field(world, t)) is not None}
    out: list[str] = []
    for table in names:
        own = next((f for f, t in referred.items() if t == table), None)
        for key, record in world.table(table).items():
            data = dump_record(record)
            where = f"table {table}, record {key!r}"
            flagged: set[str] = set()
            owner = world.domain.owner(table, record)
            if owner is not None and str(owner) not in every:
                field = next((f for f, v in data.items() if v == owner), "owner")
                flagged.add(field)
                out.append(f"{where}: field {field}: owner {owner!r} is no record of the world")
            for path, name, value in _scalars(data):
                target = referred.get(name)
                dangling = target is not None and name != own and path not in flagged and not isinstance(value, float)
                if dangling and str(value) not in keys[str(target)]:
                    out.append(f"{where}: field {path}: refers to {target} {value!r}, which the world does not hold")
                if isinstance(value, (int, float)) and value < 0 and MONEY.search(name) and not SIGNED.search(name):
                    out.append(f"{where}: field {path}: negative {name} {value:g}")
    return out


def check_integrity(world: World, source: str | None = None) -> None:
    """Raise IntegrityError naming the first problems of `world` (see `integrity_problems`)."""
    problems = integrity_problems(world)
    if problems:
        more = f" (and {len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
        raise IntegrityError(f"{source or world.name}: {'; '.join(problems[:SHOWN])}{more}")
