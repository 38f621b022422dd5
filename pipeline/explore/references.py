"""Which fields of a table name a record rather than describe one: the table's own key, another table's key under
its own name (a claim's `policy_number`), a field whose every value is a key of one other table (whatever it is
called), and a field unique per record that another table's field refers to (an alternate key: a policy's number
when its key is an id), together with that referring field. Nobody asks to change such a field as if it were a
detail of the record ("change the policy number of my claim"), so a change no tool makes is never asked of one;
nor is a question asked about the field naming the customer themselves ("the holder id of my claim").
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from pipeline.world import dump_record

if TYPE_CHECKING:
    from pipeline.explore.probe import Explorer

_CACHE: WeakKeyDictionary[Explorer, dict[str, dict[str, str]]] = WeakKeyDictionary()


def _columns(ex: Explorer) -> dict[str, dict[str, set[str]]]:
    """Each table's scalar fields and their distinct non-empty values as text."""
    out: dict[str, dict[str, set[str]]] = {}
    for table in ex.tables:
        cols: dict[str, set[str]] = {}
        for record in ex.world.table(table).values():
            for f, v in dump_record(record).items():
                if isinstance(v, (str, int)) and not isinstance(v, bool) and v != "":
                    cols.setdefault(f, set()).add(str(v))
        out[table] = cols
    return out


def _unique(ex: Explorer, table: str, values: set[str]) -> bool:
    """Whether a field holds a different value in every record (of two or more)."""
    n = len(ex.world.table(table))
    return n > 1 and len(values) == n


def references(ex: Explorer) -> dict[str, dict[str, str]]:
    """Per table, each field that names a record and the table of the record it names (its own for a key)."""
    if ex in _CACHE:
        return _CACHE[ex]
    cols = _columns(ex)
    keys = {t: {str(k) for k in ex.world.table(t)} for t in ex.tables}
    out: dict[str, dict[str, str]] = {t: {} for t in ex.tables}
    for table, fields in cols.items():
        own_key = ex.tables[table].key_field
        for f, said in fields.items():
            keyed = [o for o in ex.tables if o != table and said <= keys[o]]
            if f == own_key:
                out[table][f] = table
            elif ex.by_key.get(f, table) != table:
                out[table][f] = ex.by_key[f]
            elif keyed:
                out[table][f] = keyed[0]
            if f not in out[table] and _unique(ex, table, said):  # an alternate key another table refers to
                for other, theirs in cols.items():
                    for g, vs in theirs.items():
                        if other != table and vs <= said:
                            out[table][f] = table
                            out[other].setdefault(g, table)
    _CACHE[ex] = out
    return out


def identifying(ex: Explorer) -> dict[str, set[str]]:
    """Per table, the fields that name a record (its own or another's)."""
    return {t: set(fields) for t, fields in references(ex).items()}


def about_customer(ex: Explorer) -> dict[str, set[str]]:
    """Per table, the fields that name a customer (the record's owner, where it says so)."""
    return {t: {f for f, r in fields.items() if r == ex.customer_table} for t, fields in references(ex).items()}
