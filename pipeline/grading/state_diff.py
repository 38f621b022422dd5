"""Field-level diff of two episode end states over the same base world.

Both states are `Session.changed()` deltas (only the records that differ from the base), so the diff only
walks records that either side touched; a record absent from a delta is the base record. Each differing
leaf is classified against the base: who changed it decides whether it is a wrong value, an unrequested
change or a missing change.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from pipeline.grading.verdict import DiffKind, FieldDiff
from pipeline.world import World, dump_record

_MISSING: Any = object()
DIFF_KINDS: tuple[DiffKind, ...] = ("wrong_value", "unrequested_change", "missing_change")


def diff_states(
    world: World,
    expected_changed: Mapping[str, Mapping[str, dict]],
    actual_changed: Mapping[str, Mapping[str, dict]],
) -> list[FieldDiff]:
    """Every field where `actual_changed` disagrees with `expected_changed`, in table / id / path order.

    Dicts are walked by key and lists by index; a field present on one side only compares against a
    missing value (reported as None).
    """
    diffs: list[FieldDiff] = []
    for table in sorted(set(expected_changed) | set(actual_changed)):
        exp_table = expected_changed.get(table) or {}
        act_table = actual_changed.get(table) or {}
        keys = set(exp_table) | set(act_table)
        if not keys:
            continue
        base_table = world.table(table)
        for key in sorted(keys):
            base_rec = base_table.get(key)
            base = dump_record(base_rec) if base_rec is not None else _MISSING
            exp = exp_table.get(key, base)
            act = act_table.get(key, base)
            if exp == act:
                continue
            for path, e, a, b in _walk(exp, act, base, ()):
                diffs.append(
                    FieldDiff(
                        kind=_classify(e, a, b),
                        table=table,
                        key=key,
                        path=".".join(path),
                        expected=_value(e),
                        actual=_value(a),
                        base=_value(b),
                    )
                )
    return diffs


def _walk(e: Any, a: Any, b: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any, Any, Any]]:
    """Yield (path, expected, actual, base) for each differing leaf; recurse while both sides share a shape."""
    if e == a:
        return
    if isinstance(e, dict) and isinstance(a, dict):
        base = b if isinstance(b, dict) else {}
        for k in sorted(set(e) | set(a), key=str):
            yield from _walk(e.get(k, _MISSING), a.get(k, _MISSING), base.get(k, _MISSING), (*path, str(k)))
    elif isinstance(e, list) and isinstance(a, list):
        base_list = b if isinstance(b, list) else []
        for i in range(max(len(e), len(a))):
            yield from _walk(_at(e, i), _at(a, i), _at(base_list, i), (*path, str(i)))
    else:
        yield path, e, a, b


def _at(values: list, i: int) -> Any:
    return values[i] if i < len(values) else _MISSING


def _classify(e: Any, a: Any, b: Any) -> DiffKind:
    if a == b:
        return "missing_change"
    if e == b:
        return "unrequested_change"
    return "wrong_value"


def _value(v: Any) -> Any:
    return None if v is _MISSING else v


def count_by_kind(diffs: list[FieldDiff]) -> dict[str, int]:
    """Number of diffs of each kind (every kind present, zero if none)."""
    counts = Counter(d.kind for d in diffs)
    return {kind: counts.get(kind, 0) for kind in DIFF_KINDS}


def describe_diff(diff: FieldDiff) -> str:
    """One human-readable line: 'wrong_value orders/#W1.status: expected 'cancelled', got 'pending''."""
    where = f"{diff.table}/{diff.key}.{diff.path}" if diff.path else f"{diff.table}/{diff.key}"
    return f"{diff.kind} {where}: expected {diff.expected!r}, got {diff.actual!r} (base {diff.base!r})"


def summarize_diffs(diffs: list[FieldDiff], limit: int = 10) -> list[str]:
    """A count line followed by up to `limit` described diffs."""
    if not diffs:
        return []
    counts = count_by_kind(diffs)
    head = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
    lines = [f"{len(diffs)} differing fields ({head})"]
    lines += [describe_diff(d) for d in diffs[:limit]]
    if len(diffs) > limit:
        lines.append(f"... and {len(diffs) - limit} more")
    return lines
