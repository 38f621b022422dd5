"""Which fields of a table name a record rather than describe one: the table's own key, another table's key under
its own name (a claim's `policy_number`), a field whose every value is a key of one other table (whatever it is
called), and a field unique per record that another table's field refers to (an alternate key: a policy's number
when its key is an id), together with that referring field. Nobody asks to change such a field as if it were a
detail of the record ("change the policy number of my claim"), so a change no tool makes is never asked of one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from pipeline.world.tables import dump_record

if TYPE_CHECKING:
    from pipeline.explore.probe import Explorer

_CACHE: WeakKeyDictionary[Explorer, dict[str, set[str]]] = WeakKeyDictionary()


def _columns(ex: Explorer) -> dict[str, dict[str, list[Any]]]:
    """Each table's scalar fields and their non-empty values, record by record."""
    out: dict[str, dict[str, list[Any]]] = {}
    for table in ex.tables:
        cols: dict[str, list[Any]] = {}
        for record in ex.world.table(table).values():
            for f, v in dump_record(record).items():
                if isinstance(v, (str, int)) and not isinstance(v, bool) and v != "":
                    cols.setdefault(f, []).append(v)
        out[table] = cols
    return out


def identifying(ex: Explorer) -> dict[str, set[str]]:
    """Per table, the fields that name a record (its own or another's)."""
    if ex in _CACHE:
        return _CACHE[ex]
    cols = _columns(ex)
    keys = {t: {str(k) for k in ex.world.table(t)} for t in ex.tables}
    out: dict[str, set[str]] = {t: set() for t in ex.tables}
    for table, fields in cols.items():
        own_key = ex.tables[table].key_field
        for f, values in fields.items():
            said = {str(v) for v in values}
            elsewhere = [other for other in ex.tables if other != table]
            if f == own_key or ex.by_key.get(f, table) != table or any(said <= keys[o] for o in elsewhere):
                out[table].add(f)
            if len(values) > 1 and len(said) == len(values):  # unique per record: referred to elsewhere?
                for other, theirs in cols.items():
                    for g, vs in theirs.items():
                        if other != table and {str(v) for v in vs} <= said:
                            out[table].add(f)
                            out[other].add(g)
    _CACHE[ex] = out
    return out
