"""`compact`: the model's own chat template, a short system turn, and tool calls written as Python calls.

For small instruct models (SmolLM2-135M, Gemma 3 270M) whose templates know no tools. The policy becomes its
summary where one is bound to its exact text (`pipeline.formats.summaries`); the JSON schemas of every
tool (two thirds of a `generic` prompt) become one line per tool, `name(arg, list_arg[], optional?) - what it
does`; tool results are flattened to `key: value` lines (`codec.compact_tool_result`); and a call is

    <tool_call>find_user_id_by_email(email="a@b.com")</tool_call>

a syntax such models have read far more of than nested JSON. Reading is lenient where intent is plain and strict
where it is not: keyword or positional arguments (positional ones take the schema's parameter order), Python or
JSON literals (`true`/`null` too), a JSON object in the tag, or a whole reply that is just a call to a known tool.
Anything else inside the tag stays a call with `arguments=None` and its text in `raw_arguments`, so the world
refuses it and the grader sees what the model wrote.

Measure (`hf`), SFT, GRPO and `serve` all go through this one object (`render` / `prompt_ids`), so the model is
trained on exactly the prompts it is measured and served with.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pipeline.formats.base import ChatFormatError
from pipeline.formats.codec import compact_tool_result
from pipeline.formats.parsers import call_from_text
from pipeline.formats.template import TemplateFormat
from pipeline.rollout import Message, ToolCall

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
TOOLS_HEAD = (
    "Tools. To use one, reply with only the call, e.g. "
    f'{CALL_OPEN}name(arg="value", ids=["1", "2"]){CALL_CLOSE}; the result comes back as a tool message.'
)
_CALL_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.S)
_BARE_RE = re.compile(r"\s*([A-Za-z_]\w*)\s*\(.*\)\s*", re.S)
_LEAD_NAME_RE = re.compile(r"\s*([A-Za-z_]\w*)\s*\(")
_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    cut = re.search(r"(?<=[.!?])\s", text)
    return text[: cut.start()] if cut else text


def tool_line(schema: Mapping[str, Any]) -> str:
    """`name(arg, list_arg[], optional_arg?) - first sentence of the description`."""
    from pipeline.formats.codec import tool_signature

    fn = schema.get("function", schema)
    about = _first_sentence(fn.get("description") or "")
    return f"{tool_signature(schema)} - {about}" if about else tool_signature(schema)


def render_system(policy: str | None, tools: Sequence[Mapping[str, Any]]) -> str:
    """The policy's summary where one is bound to its text (`formats.summaries`), else the policy; the tools."""
    from pipeline.formats.summaries import summary_of

    parts = [summary_of(policy).strip()] if policy and policy.strip() else []
    if tools:
        parts.append("\n".join([TOOLS_HEAD, *(tool_line(t) for t in tools)]))
    return "\n\n".join(parts)


def py_literal(value: Any) -> str:
    """A JSON value as a Python literal (strings double-quoted, JSON escapes are Python escapes)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, str | int | float):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        items = (f"{json.dumps(str(k), ensure_ascii=False)}: {py_literal(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(py_literal(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False, default=str)


def format_call(call: ToolCall) -> str:
    """`<tool_call>name(k=v, ...)</tool_call>`; a call whose arguments were unreadable keeps its text."""
    if call.arguments is None:
        inner = call.raw_arguments if call.raw_arguments is not None else f"{call.name}()"
    else:
        inner = f"{call.name}({', '.join(f'{k}={py_literal(v)}' for k, v in call.arguments.items())})"
    return f"{CALL_OPEN}{inner}{CALL_CLOSE}"


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, str | int | float | bool)):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _value(node.operand)
        if isinstance(inner, int | float) and not isinstance(inner, bool):
            return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(x) for x in node.elts]
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {str(_value(cast(ast.expr, k))): _value(v) for k, v in zip(node.keys, node.values, strict=True)}
    raise ValueError(f"not a literal: {ast.dump(node)[:60]}")


def _parameters(tools: Sequence[Mapping[str, Any]] | None, name: str) -> list[str] | None:
    for tool in tools or []:
        fn = tool.get("function", tool)
        if fn.get("name") == name:
            return list(fn.get("parameters", {}).get("properties", {}))
    return None


def parse_call(body: str, call_id: str, tools: Sequence[Mapping[str, Any]] | None = None) -> ToolCall:
    """One call's text: `name(k=v, ...)` (positional arguments by the schema's order), or a JSON object."""
    text = body.strip()
    if text.startswith("{"):
        return call_from_text(text, call_id)
    lead = _LEAD_NAME_RE.match(text)
    broken = ToolCall(id=call_id, name=lead.group(1) if lead else "", arguments=None, raw_arguments=text)
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError):
        return broken
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return broken
    name = node.func.id
    try:
        args: dict[str, Any] = {}
        if node.args:
            order = _parameters(tools, name)
            if order is None or len(node.args) > len(order) or any(isinstance(a, ast.Starred) for a in node.args):
                return broken
            args.update({key: _value(a) for key, a in zip(order, node.args, strict=False)})
        for kw in node.keywords:
            if kw.arg is None or kw.arg in args:
                return broken
            args[kw.arg] = _value(kw.value)
    except ValueError:
        return broken
    return ToolCall(id=call_id, name=name, arguments=args, raw_arguments=json.dumps(args, ensure_ascii=False))


def parse_compact(text: str, id_prefix: str = "call_", tools: Sequence[Mapping[str, Any]] | None = None):
    """(visible text, calls) of a reply in the compact syntax."""
    bodies = [m.group(1) for m in _CALL_RE.finditer(text)]
    if not bodies:
        bare = _BARE_RE.fullmatch(text)
        if bare and _parameters(tools, bare.group(1)) is not None:
            return None, [parse_call(text, f"{id_prefix}0", tools)]
        return (text.strip() or None), []
    calls = [parse_call(b, f"{id_prefix}{i}", tools) for i, b in enumerate(bodies)]
    outside = "\n".join(p.strip() for p in _CALL_RE.split(text)[::2] if p.strip())
    return outside or None, calls


_PROBE = "agentloop-probe-result-7f3a"
_TAKES_TOOL_TURNS: dict[str, bool] = {}


def takes_tool_turns(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template renders a `tool` turn between model turns (ChatML, Llama 3, Qwen do;
    Gemma's raises unless user and model alternate, and some templates drop roles they do not know)."""
    from jinja2 import TemplateError

    template = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else repr(tokenizer.chat_template)
    if template not in _TAKES_TOOL_TURNS:
        probe = [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "looking"},
            {"role": "tool", "content": _PROBE},
            {"role": "assistant", "content": "done"},
        ]
        try:
            text = tokenizer.apply_chat_template(probe, tokenize=False)
            _TAKES_TOOL_TURNS[template] = _PROBE in text
        except TemplateError:
            _TAKES_TOOL_TURNS[template] = False
    return _TAKES_TOOL_TURNS[template]


@dataclass(frozen=True)
class CompactFormat(TemplateFormat):
    """The model's template with the compact system turn, flattened results and Python-call syntax."""

    def template_messages(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]],
        policy: str | None,
        results_as_user: bool = False,
    ) -> list[dict[str, Any]]:
        """`results_as_user`: for a template with user and model turns only (Gemma's), a tool result is a user turn
        (`<tool_response>` around it; results in a row share one turn)."""
        system = render_system(policy, tools)
        out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        for m in messages:
            if m.role == "tool" and results_as_user:
                text = f"<tool_response>\n{compact_tool_result(m.content or '')}\n</tool_response>"
                if out and out[-1]["role"] == "user":
                    out[-1]["content"] += "\n" + text
                else:
                    out.append({"role": "user", "content": text})
            elif m.role == "tool":
                out.append({"role": "tool", "content": compact_tool_result(m.content or "")})
            elif m.role == "assistant":
                parts = [m.content.strip()] if m.content and m.content.strip() else []
                parts += [format_call(c) for c in m.tool_calls]
                out.append({"role": "assistant", "content": "\n".join(parts)})
            else:
                out.append({"role": m.role, "content": m.content or ""})
        return out

    def render(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]],
        policy: str | None,
        tokenizer: Any,
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        from jinja2 import TemplateError

        self.check_tokenizer(tokenizer)
        conversation = self.template_messages(messages, tools, policy, not takes_tool_turns(tokenizer))
        try:
            return tokenizer.apply_chat_template(
                conversation, add_generation_prompt=add_generation_prompt, tokenize=False, **dict(self.template_kwargs)
            )
        except TemplateError as exc:
            raise ChatFormatError(
                f"format {self.name!r}: the model's chat template refused the conversation: {exc}"
            ) from exc

    def parse(self, text: str, id_prefix: str = "call_", tools: Sequence[Mapping[str, Any]] | None = None) -> Message:
        content, calls = parse_compact(text, id_prefix, tools)
        return Message(role="assistant", content=content, tool_calls=calls, raw=text)
