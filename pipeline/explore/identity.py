"""What a customer knows about themselves, derived from the domain rather than from a list of field names.

A customer knows what their own record holds: each argument an identity tool takes (by its name in the tool's
JSON schema, and each field the domain's `identity_fields` adds) whose value their record, or a record they own,
holds — an email, a date of birth, a member number, a PIN; the customer-info fields a task's `KnownInfo` names
(email, first and last name, zip, phone); their user id; and their name as the record keeps it (one `name` or
`full_name` field, first and last name, or a name's parts in record order: given name and surname). So a domain
that identifies by date of birth and email, or by member number and PIN, has customers who can identify
themselves, and every customer can be spoken to by their own, whole name.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pipeline.dataset import KnownInfo
from pipeline.explore.values import harvest
from pipeline.world import dump_record

if TYPE_CHECKING:
    from pipeline.explore.probe import Explorer

NAMED = ("name", "full_name")
"""Fields that keep a person's whole name, in the order they are looked for."""
NOT_A_NAME = ("first_name", "last_name", "user_name", "username", "screen_name", "display_name")
NAME_PART = re.compile(r"^(first|given|fore|christian|middle|second|last|family|sur)_?names?$")
"""A field that keeps one part of a person's name ('given_name', 'surname', 'family_name')."""
_FIXED = tuple(f for f in KnownInfo.model_fields if f != "facts")


def _scalar(values: list[Any]) -> Any:
    return next((v for v in values if isinstance(v, (str, int, float)) and v != ""), None)


def identity_arguments(ex: Explorer) -> list[str]:
    """The argument names of every identity tool, in the domain's tool order, then the fields the domain declares
    (`Domain.identity_fields`)."""
    out: list[str] = []
    for model in ex.tools.values():
        if model.kind == "identity":
            out += [a for a in model.args if a not in out]
    return out + [f for f in ex.domain.identity_fields() if f not in out]


def known(ex: Explorer, user: str) -> KnownInfo:
    """What `user` can say about themselves in `ex`'s world."""
    table = ex.customer_table
    record = dump_record(ex.world.table(table)[user]) if table else {}
    own = harvest([record]) if table else {}
    owned = harvest(ex.records_of(user))
    found: dict[str, Any] = {}
    for f in _FIXED:  # the customer-info fields of their own record, as before: text only
        value = next((v for v in own.get(f, []) if isinstance(v, str)), None)
        if value is not None:
            found[f] = value
    found.setdefault("user_id", user)
    if "name" not in found and not (found.get("first_name") and found.get("last_name")):
        spoken = _scalar([v for f in NAMED for v in own.get(f, []) if isinstance(v, str)]) or whole_name(record)
        spoken = spoken or _scalar([v for f, vs in own.items() if f.endswith("_name") and f not in NOT_A_NAME
                                    for v in vs if isinstance(v, str)])  # fmt: skip
        if spoken:
            found["name"] = spoken
    facts: dict[str, Any] = {}
    types = {a: f.annotation for n in ex.domain.tools.of_kind("identity")
             for a, f in ex.domain.tools[n].args_model.model_fields.items()}  # fmt: skip
    for a in identity_arguments(ex):
        if a in found:
            continue
        value = _scalar(own.get(a, [])) if a in own else None
        if value is None and table is not None and ex.by_key.get(a) == table:
            value = user  # the customer table's key, whatever the tool calls it
        if value is None:
            value = _scalar(owned.get(a, []))
        if value is None:  # a field named for the argument in other words ('patient_email', 'dob')
            value = _scalar([v for f, vs in own.items() if named_for(a, f) for v in vs])
        if value is None and a in NAMED:
            value = KnownInfo(**found).called
        if value is None:
            continue
        if a in _FIXED:
            found[a] = str(value)
        else:
            facts[a] = _as(types.get(a), value)
    return KnownInfo(**found, facts=facts)


def whole_name(record: dict[str, Any]) -> str | None:
    """The name a record keeps in parts ('given_name' and 'surname'), joined in the record's field order; None
    unless it has two parts or more (one part alone is half a name)."""
    parts = [v.strip() for f, v in record.items() if NAME_PART.match(f.lower()) and isinstance(v, str) and v.strip()]
    return " ".join(parts) if len(parts) > 1 else None


def named_for(argument: str, field: str) -> bool:
    """Whether a record field is the argument under another name: its last words ('patient_email' → 'email'),
    more words ('email' → 'email_address') or its initials ('dob' ↔ 'date_of_birth')."""
    return argument.endswith(f"_{field}") or field.startswith(f"{argument}_") or _initials(argument, field)


def _initials(short: str, long: str) -> bool:
    if "_" in short:
        short, long = long, short
    return len(short) > 1 and "_" in long and "".join(w[:1] for w in long.split("_")) == short


def _as(annotation: Any, value: Any) -> Any:
    """The value as the identity tool's argument takes it (a PIN kept as a number in the record, asked as text)."""
    if annotation is str and not isinstance(value, str):
        return str(value)
    if annotation is int and isinstance(value, str) and value.isdigit():
        return int(value)
    return value
