"""Python types from JSON Schema: the record and argument models of an environment known only by its metadata.

An environment behind the protocol describes its records and its tools' parameters in JSON Schema; the loop's
generic parts read pydantic models (which fields a record has, which argument is a list of strings). This builds
them: objects with properties become models (the fields the schema requires required, the rest optional,
unknown fields kept, so any record the environment sends survives a round trip), `additionalProperties` a dict,
arrays lists, `anyOf` a union, `$ref` the definition it names.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Optional, Union, cast

from pydantic import BaseModel, ConfigDict, Field, create_model

from pipeline.errors import InputError

SCALARS: dict[str, Any] = {"string": str, "integer": int, "boolean": bool, "null": type(None)}


class SchemaError(InputError, ValueError):
    """A JSON Schema the loop cannot read; the message names where in it."""


class LooseRecord(BaseModel):
    """A record of an environment known by its schema: declared fields typed, anything else kept as sent."""

    model_config = ConfigDict(extra="allow")
    as_sent: ClassVar[bool] = True
    """`dump_record` gives back exactly the fields the environment sent (nulls included, absent ones absent)."""


def python_type(schema: Any, defs: dict[str, Any], where: str, depth: int = 0) -> Any:
    """The Python type a (sub)schema describes."""
    if depth > 32:
        raise SchemaError(f"{where}: schema nested deeper than 32 levels")
    if not isinstance(schema, dict) or not schema:
        return Any
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        if name not in defs:
            raise SchemaError(f"{where}: $ref {schema['$ref']!r} names no definition in $defs")
        return python_type(defs[name], defs, f"{where}.{name}", depth + 1)
    for union in ("anyOf", "oneOf"):
        if isinstance(schema.get(union), list):
            members = [python_type(s, defs, where, depth + 1) for s in schema[union]]
            unique = list(dict.fromkeys(members))
            return Union[tuple(unique)] if len(unique) > 1 else unique[0]  # noqa: UP007 - built at run time
    if isinstance(schema.get("enum"), list) and schema["enum"] and all(isinstance(v, str) for v in schema["enum"]):
        return Literal[tuple(schema["enum"])]
    kind = schema.get("type")
    if isinstance(kind, list):
        return Union[tuple(python_type({**schema, "type": k}, defs, where, depth + 1) for k in kind)]  # noqa: UP007
    if kind in SCALARS:
        return SCALARS[kind]
    if kind == "number":
        return Union[int, float]  # noqa: UP007 - an integer stays one
    if kind == "array":
        item = python_type(schema.get("items"), defs, f"{where}[]", depth + 1)
        return cast(Any, list)[item]
    if kind == "object" or "properties" in schema:
        if isinstance(schema.get("properties"), dict) and schema["properties"]:
            return record_model(schema, defs, where, depth + 1)
        extra = schema.get("additionalProperties")
        value = python_type(extra, defs, f"{where}.*", depth + 1) if isinstance(extra, dict) else Any
        return cast(Any, dict)[str, value]
    return Any


def record_model(schema: dict[str, Any], defs: dict[str, Any] | None, where: str, depth: int = 0) -> type[BaseModel]:
    """A model of an object schema: each property a field of its type (optional unless required), unknown fields
    kept."""
    defs = {**(defs or {}), **(schema.get("$defs") or {})}
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        raise SchemaError(f"{where}: expected an object schema with properties, got {sorted(schema)}")
    required = set(schema.get("required") or [])
    fields: dict[str, Any] = {}
    for name, sub in properties.items():
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise SchemaError(f"{where}: property {name!r} is not a field name the loop can hold")
        annotation = python_type(sub, defs, f"{where}.{name}", depth)
        fields[name] = (annotation, ...) if name in required else (Optional[annotation], None)  # noqa: UP045
    title = str(schema.get("title") or where.rsplit(".", 1)[-1] or "Record")
    model_name = "".join(part for part in title.replace("-", " ").replace(".", " ").title().split()) or "Record"
    return create_model(model_name, __base__=LooseRecord, **fields)


def arguments_model(name: str, parameters: Any) -> type[BaseModel]:
    """The arguments model of a tool from its JSON Schema `parameters`: required properties required, the rest
    defaulting to the schema's default (else None); unknown arguments refused, as a tool of the loop's own does."""
    where = f"tool {name!r} parameters"
    if parameters in (None, {}):
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, dict) or not isinstance(parameters.get("properties", {}), dict):
        raise SchemaError(f"{where}: expected an object schema with properties")
    defs = parameters.get("$defs") or {}
    required = set(parameters.get("required") or [])
    fields: dict[str, Any] = {}
    for arg, sub in (parameters.get("properties") or {}).items():
        if not isinstance(arg, str) or not arg.isidentifier() or arg.startswith("_"):
            raise SchemaError(f"{where}: property {arg!r} is not an argument name the loop can pass")
        annotation = python_type(sub, defs, f"{where}.{arg}")
        description = sub.get("description") if isinstance(sub, dict) else None
        if arg in required:
            fields[arg] = (annotation, Field(..., description=description))
        else:
            default = sub.get("default") if isinstance(sub, dict) else None
            fields[arg] = (Optional[annotation], Field(default, description=description))  # noqa: UP045
    return create_model(f"{name}_args", __config__=ConfigDict(extra="forbid", strict=True), **fields)
