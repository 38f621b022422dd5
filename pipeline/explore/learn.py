"""From explored calls to the world model: effects of the successful calls, and refusals grouped by message into
preconditions (a field of a record an argument names, an argument against its record's field, another customer's
record)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipeline.explore.contrast import confirmed
from pipeline.explore.model import RECIPES, Effect, Precondition, Recipe, RefusalGroup, WriteModel
from pipeline.explore.values import harvest

if TYPE_CHECKING:
    from pipeline.explore.probe import Explorer

_DIGITS = re.compile(r"\S*\d\S*")


@dataclass
class Call:
    """One explored call and what came of it."""

    tool: str
    user: str
    arguments: dict
    subject: str | None
    own: bool
    state: dict | None  # the subject record before the call
    ok: bool
    error: str | None = None
    category: str | None = None
    # key argument → the (key, record) pairs it named, before the call (one for a key, each for a list of keys)
    named: dict[str, list[tuple[str, dict]]] = field(default_factory=dict)
    # (table, key, field, before, after, created) per changed field
    changes: list[tuple[str, str, str, Any, Any, bool]] = field(default_factory=list)


def pattern(call: Call) -> str:
    text = call.error or ""
    referred = [v for a, recs in call.named.items() if "." in a for _, r in recs for v in r.values()]  # a bill's meter
    top = [*call.arguments.values(), *(call.state or {}).values(), *referred]
    nested = [v for vs in harvest([call.arguments, call.state or {}]).values() for v in vs if _named(v)]
    values = [v for v in (*top, *nested) if isinstance(v, str) and len(v) > 1]
    for v in sorted(values, key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(v)}(?!\w)", "<v>", text)
    return _DIGITS.sub("<n>", text)


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """A refusal group's message pattern (ids and values as <v>, numbers as <n>) as a regular expression."""
    parts = re.split(r"(<v>|<n>)", pattern)
    return re.compile("^" + "".join(".+?" if p in ("<v>", "<n>") else re.escape(p) for p in parts) + "$")


def fold(groups: dict[tuple[str, str], list[Call]]) -> dict[tuple[str, str], list[Call]]:
    """A group whose pattern is an instance of another's of the same category (a plain word of the message taken
    for a value in some calls) joins that one."""
    out = dict(groups)
    for cat, pat in sorted(groups, key=lambda k: k[1].count("<")):
        general = next((k for k in out if k[0] == cat and k[1] != pat and k[1].count("<") > pat.count("<")
                        and pattern_regex(k[1]).match(pat)), None)  # fmt: skip
        if general is not None and (cat, pat) in out:
            out[general] = out[general] + out.pop((cat, pat))
    return out


def _named(value: object) -> bool:
    """A nested value that names something (an id, a name), not a plain word the message may also use."""
    return isinstance(value, str) and not (value.isalpha() and value.islower())


def _relation(call: Call, arg: str) -> str | None:
    a, b = call.arguments.get(arg), (call.state or {}).get(arg)
    if a is None or b is None:
        return None
    if isinstance(a, list) and isinstance(b, list):
        a, b = len(a), len(b)
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return "=" if a == b else None
    return "<" if a < b else ">" if a > b else "="


def precondition(
    ex: Explorer, tool: str, group: list[Call], ok: list[Call], message: str | None = None
) -> Precondition | None:
    """What explains a refusal group: another customer's record; a field of the records an argument names whose
    refused values no successful call had, confirmed by contrast (`pipeline.explore.contrast`); an argument against
    the record's field of that name. `message`: the group's pattern (default: its first call's)."""
    if all(not c.own for c in group) and all(c.own for c in ok):
        return Precondition(kind="owner")
    subject, _ = ex.subject(tool)
    keyed = [(a, m.table) for a, m in ex.tools[tool].args.items() if m.binds in ("key", "items") and m.table]
    keyed = sorted(keyed, key=lambda x: x[0] != subject)  # the subject's records first, then those they refer to
    keyed += [(a, ex.by_key[a.partition(".")[2]]) for a in sorted({a for c in group for a in c.named if "." in a})]
    for arg, table in keyed if ok else []:
        if not all(arg in c.named for c in group):
            continue
        for f in ex.tables[table].enumerated:
            allowed = {v for c in ok for v in _values(c, arg, f)}
            outside = [_values(c, arg, f) - allowed for c in group]
            if not allowed or not all(outside):
                continue
            if confirmed(ex, group, arg, table, f, _sorted(allowed), pattern_regex(message or pattern(group[0]))):
                on = None if arg == subject else arg
                refused = set().union(*outside)
                return Precondition(kind="field", field=f, on=on, values=_sorted(refused), allowed=_sorted(allowed))
    for arg in ex.tools[tool].args:
        rels = {_relation(c, arg) for c in group}
        if None in rels or not rels or any(_relation(c, arg) in rels for c in ok):
            continue
        return Precondition(kind="compare", field=arg, relation=rels.pop() if len(rels) == 1 else "!=")
    return None


def _ok_states(ex: Explorer, ok: list[Call], subject: str | None, table: str | None) -> dict[str, list]:
    """Per enumerated field of the subject's table, the values it had on the records the write succeeded on."""
    if not (table and subject):
        return {}
    return {f: _sorted({v for c in ok for v in _values(c, subject, f)}) for f in ex.tables[table].enumerated}


def _values(call: Call, arg: str, f: str) -> set:
    """The values of field `f` of the records the call's argument `arg` names."""
    return {_h(rec.get(f)) for _, rec in call.named.get(arg, [])}


def _h(v: Any) -> Any:
    return v if not isinstance(v, (list, dict)) else repr(v)


def _sorted(values: set) -> list:
    return sorted(values, key=lambda x: (x is None, str(x)))


def summarize(ex: Explorer, tool: str, calls: list[Call]) -> WriteModel:
    subject, table = ex.subject(tool)
    ok = [c for c in calls if c.ok]
    groups: dict[tuple[str, str], list[Call]] = defaultdict(list)
    for c in calls:
        if not c.ok and c.category not in ("invalid_arguments", "internal"):
            groups[(c.category or "precondition", pattern(c))].append(c)
    groups = fold(groups)
    refusals: list[RefusalGroup] = []
    per_category: Counter[str] = Counter()
    for (category, pat), group in sorted(groups.items(), key=lambda x: (-len(x[1]), x[0])):
        per_category[category] += 1
        refusals.append(
            RefusalGroup(
                name=f"{category}_{per_category[category]}",
                category=category,
                pattern=pat,
                calls=len(group),
                example=group[0].error or "",
                precondition=precondition(ex, tool, group, ok, pat),
                recipes=recipes(group),
            )
        )
    refusals = merge(refusals)
    allowed = {
        ".".join(filter(None, (r.precondition.on, r.precondition.field))): r.precondition.allowed
        for r in refusals
        if r.precondition and r.precondition.kind == "field" and r.precondition.field
    }
    return WriteModel(
        subject=subject,
        subject_table=table,
        calls=len(calls),
        ok=len(ok),
        effects=effects(ok),
        refusals=refusals,
        allowed_when=allowed,
        ok_states=_ok_states(ex, ok, subject, table),
    )


def merge(groups: list[RefusalGroup]) -> list[RefusalGroup]:
    """Groups of one category explained by the same record field are one precondition (values joined)."""
    out: list[RefusalGroup] = []
    for g in groups:
        p = g.precondition
        same = next(
            (o for o in out if p and o.precondition and o.category == g.category
             and _same(o.precondition, p)),
            None,
        )  # fmt: skip
        if same is None:
            out.append(g)
            continue
        assert same.precondition is not None and p is not None  # both required by the match above
        values = _sorted({*same.precondition.values, *p.values})
        same.precondition = same.precondition.model_copy(update={"values": values})
        same.calls += g.calls
        same.recipes = (same.recipes + g.recipes)[:RECIPES]
    return out


def recipes(group: list[Call]) -> list[Recipe]:
    """Up to `RECIPES` of a group's refused calls, one per customer first."""
    firsts: list[Call] = []
    rest: list[Call] = []
    seen: set = set()
    for c in group:
        (rest if c.user in seen else firsts).append(c)
        seen.add(c.user)
    return [Recipe(user=c.user, arguments=c.arguments) for c in (firsts + rest)[:RECIPES]]


def _same(a: Precondition, b: Precondition) -> bool:
    return (a.kind, a.field, a.on, a.relation) == (b.kind, b.field, b.on, b.relation)


def effects(ok: list[Call]) -> list[Effect]:
    by: dict[tuple[str, str], list[tuple[Call, Any, Any, bool]]] = defaultdict(list)
    for c in ok:
        for t, _k, f, before, after, new in c.changes:
            by[(t, f)].append((c, before, after, new))
    out = []
    for (t, f), seen in sorted(by.items()):
        scalar = [(b, a) for _, b, a, _ in seen if not isinstance(a, (list, dict)) and not isinstance(b, (list, dict))]
        transitions = sorted({(b, a) for b, a in scalar}, key=str)[:10]
        set_from = next(
            (a for a in seen[0][0].arguments if all(c.arguments.get(a) == after for c, _, after, _ in seen)), None
        )
        created = all(new for *_, new in seen)
        out.append(Effect(table=t, field=f, calls=len(seen), transitions=[list(x) for x in transitions],
                          set_from=set_from, created=created))  # fmt: skip
    return out
