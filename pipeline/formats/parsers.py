"""Tool-call parsers: a model's raw text → visible content, tool calls and thinking, one function per family.

Every parser returns a `Parsed`; a call whose arguments cannot be read stays a call (`arguments=None`, the text
kept in `raw_arguments`, the name recovered where it can be read), so the world refuses it and the grader sees
what the model wrote. JSON calls take their arguments from `arguments` or `parameters` (Llama 3 writes the
latter), given as an object or as a JSON string.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline import jsondepth
from pipeline.rollout import ToolCall

_NAME_RE = re.compile(r"""["']name["']\s*:\s*["']([^"'\\]*)["']""")
_HERMES_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.S)  # unclosed: to next/end
_FUNCTION_RE = re.compile(r"<function=([^>\n]*)>(.*?)(?:</function>|(?=<function=)|\Z)", re.S)
_PARAMETER_RE = re.compile(r"<parameter=([^>\n]*)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.S)
_MISTRAL_NAMED_RE = re.compile(r"\s*([\w.\-]+)(?:\[CALL_ID\][\w\-]*)?\[ARGS\](.*)", re.S)
PYTHON_TAG, MISTRAL_TAG = "<|python_tag|>", "[TOOL_CALLS]"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


@dataclass
class Parsed:
    """What a parser read: the customer-visible text, the calls, and any thinking (never shown to the customer)."""

    content: str | None
    calls: list[ToolCall] = field(default_factory=list)
    reasoning: str | None = None


def _joined(parts: Sequence[str]) -> str | None:
    return "\n".join(p.strip() for p in parts if p and p.strip()) or None


def call_from_json(obj: Any, call_id: str, raw: str) -> ToolCall:
    """A call from a decoded JSON value (`{"name", "arguments"|"parameters"}`, or OpenAI's `{"function": {...}}`)."""
    if isinstance(obj, dict) and "name" not in obj and isinstance(obj.get("function"), dict):
        obj = obj["function"]
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        match = _NAME_RE.search(raw)
        return ToolCall(id=call_id, name=match.group(1) if match else "", arguments=None, raw_arguments=raw)
    args = obj["arguments"] if "arguments" in obj else obj.get("parameters", {})
    if isinstance(args, str):  # some models emit the arguments as a JSON string
        with contextlib.suppress(json.JSONDecodeError):
            args = jsondepth.loads(args)
    if isinstance(args, dict):
        return ToolCall(
            id=call_id, name=obj["name"], arguments=args, raw_arguments=json.dumps(args, ensure_ascii=False)
        )
    return ToolCall(id=call_id, name=obj["name"], arguments=None, raw_arguments=raw)


def call_from_text(text: str, call_id: str) -> ToolCall:
    text = text.strip()
    try:
        obj = jsondepth.loads(text)
    except json.JSONDecodeError:
        obj = None
    return call_from_json(obj, call_id, text)


def _json_values(text: str) -> tuple[list[tuple[Any, str]], str]:
    """Consecutive JSON values at the start of `text` (separated by whitespace, `;` or `,`) and what follows."""
    values, pos = [], 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n;,":
            pos += 1
        if pos >= len(text) or text[pos] not in "{[":
            break
        try:
            value, end = jsondepth.raw_decode(text, pos)
        except json.JSONDecodeError:
            break
        values.append((value, text[pos:end]))
        pos = end
    return values, text[pos:]


def split_thinking(text: str) -> tuple[str | None, str]:
    """(thinking, the rest): `<think>…</think>` before the answer; a bare `</think>` ends thinking the prompt opened;
    an unclosed `<think>` (the model ran out of tokens) is all thinking."""
    if THINK_CLOSE in text:
        before, after = text.split(THINK_CLOSE, 1)
        return before.split(THINK_OPEN)[-1].strip("\n"), after.lstrip("\n")
    if THINK_OPEN in text:
        before, after = text.split(THINK_OPEN, 1)
        return after.strip("\n"), before
    return None, text


def parse_hermes(text: str, id_prefix: str = "call_", tools: Sequence[Mapping] | None = None) -> Parsed:
    """Hermes / Qwen2.5: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, text around it kept."""
    calls = [call_from_text(m.group(1), f"{id_prefix}{i}") for i, m in enumerate(_HERMES_RE.finditer(text))]
    return Parsed(_joined(_HERMES_RE.split(text)[::2]), calls)


def parse_llama3(text: str, id_prefix: str = "call_", tools: Sequence[Mapping] | None = None) -> Parsed:
    """Llama 3.x: a JSON object (or several, `;`-separated) as the whole reply, with or without `<|python_tag|>`.

    Without the tag, a reply is a call only when it starts with a JSON object that has a string `name`; text
    after the tag that is not JSON is a broken call."""
    before, tag, after = text.partition(PYTHON_TAG)
    body = after if tag else before
    values, rest = _json_values(body.lstrip())
    calls = [call_from_json(v, f"{id_prefix}{i}", raw) for i, (v, raw) in enumerate(values)]
    if not tag and not (calls and calls[0].arguments is not None):
        return Parsed(_joined([text]))
    if tag and not calls and rest.strip():
        calls, rest = [call_from_text(rest, f"{id_prefix}0")], ""
    return Parsed(_joined([before if tag else "", rest]), calls)


def parse_mistral(text: str, id_prefix: str = "call_", tools: Sequence[Mapping] | None = None) -> Parsed:
    """Mistral: `[TOOL_CALLS][{"name", "arguments"}, ...]`, or the newer `[TOOL_CALLS]name[ARGS]{...}` per call."""
    head, *pieces = text.split(MISTRAL_TAG)
    calls: list[ToolCall] = []
    rest_text: list[str] = []
    for piece in pieces:
        named = _MISTRAL_NAMED_RE.match(piece)
        if named:
            values, rest = _json_values(named.group(2))
            obj = {"name": named.group(1), "arguments": values[0][0]} if values else None
            calls.append(call_from_json(obj, f"{id_prefix}{len(calls)}", named.group(2).strip()))
            rest_text.append(rest)
            continue
        values, rest = _json_values(piece)
        flat = [(v, raw) for value, raw in values for v in (value if isinstance(value, list) else [value])]
        if not flat and piece.strip():
            flat, rest = [(None, piece.strip())], ""
        calls += [call_from_json(v, f"{id_prefix}{len(calls) + i}", raw) for i, (v, raw) in enumerate(flat)]
        rest_text.append(rest)
    return Parsed(_joined([head, *rest_text]), calls)


def _schema_type(tools: Sequence[Mapping] | None, name: str, key: str) -> str | None:
    for tool in tools or []:
        fn = tool.get("function", tool)
        if fn.get("name") == name:
            prop = fn.get("parameters", {}).get("properties", {}).get(key, {})
            kind = prop.get("type")
            return kind if isinstance(kind, str) else None
    return None


def _xml_value(raw: str, kind: str | None) -> Any:
    """A parameter's text as the schema's type says (no schema: JSON objects/arrays decoded, the rest text)."""
    value = raw[1:] if raw.startswith("\n") else raw
    value = value[:-1] if value.endswith("\n") else value
    if kind == "string":
        return value
    try:
        decoded = jsondepth.loads(value)
    except json.JSONDecodeError:
        return value
    if kind is None:
        return decoded if isinstance(decoded, dict | list) else value
    return decoded


def parse_qwen3_coder(text: str, id_prefix: str = "call_", tools: Sequence[Mapping] | None = None) -> Parsed:
    """Qwen3-Coder XML: `<tool_call><function=name><parameter=x>value</parameter></function></tool_call>`."""
    blocks = [m.group(1) for m in _HERMES_RE.finditer(text)]
    outside = _HERMES_RE.split(text)[::2]
    if not blocks and "<function=" in text:  # the wrapper left out
        head, _, tail = text.partition("<function=")
        blocks, outside = ["<function=" + tail], [head]
    calls: list[ToolCall] = []
    for block in blocks:
        functions = list(_FUNCTION_RE.finditer(block))
        if not functions:
            calls.append(ToolCall(id=f"{id_prefix}{len(calls)}", name="", arguments=None, raw_arguments=block.strip()))
        for fn in functions:
            name = fn.group(1).strip()
            args = {
                p.group(1).strip(): _xml_value(p.group(2), _schema_type(tools, name, p.group(1).strip()))
                for p in _PARAMETER_RE.finditer(fn.group(2))
            }
            raw = json.dumps(args, ensure_ascii=False)
            calls.append(ToolCall(id=f"{id_prefix}{len(calls)}", name=name, arguments=args, raw_arguments=raw))
    return Parsed(_joined(outside), calls)


PARSERS = {"hermes": parse_hermes, "llama3": parse_llama3, "mistral": parse_mistral, "qwen3_coder": parse_qwen3_coder}
"""Tool-call syntaxes by name."""
