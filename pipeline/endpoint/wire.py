"""Our messages ↔ the OpenAI chat-completions wire format, both ways (the client and `agentloop serve` share it).

A tool call whose arguments are not a JSON object stays a call: `arguments=None` and the text as sent in
`raw_arguments`, so the world refuses it and the grader sees exactly what the model produced. An endpoint
that returns Hermes-style `<tool_call>` text in `content` (a vLLM server started without a tool parser) is
read through the codec, like every other raw-text backend.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pipeline.formats import TOOL_CALL_OPEN, parse_assistant
from pipeline.rollout import Message, ToolCall


def text_of(content: Any) -> str | None:
    """Content as text: a string, or the text parts of a list of content parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content)


def call_to_openai(call: ToolCall) -> dict[str, Any]:
    if call.arguments is not None:
        arguments = json.dumps(call.arguments, ensure_ascii=False)
    else:
        arguments = call.raw_arguments if call.raw_arguments is not None else ""
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}


def message_to_openai(message: Message) -> dict[str, Any]:
    """One of our messages as a chat-completions message."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [call_to_openai(c) for c in message.tool_calls]
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
        if message.name:
            out["name"] = message.name
        out["content"] = message.content or ""
    return out


def to_openai_messages(messages: Sequence[Message], system: str | None = None) -> list[dict[str, Any]]:
    """The request's `messages`: an optional system prompt, then the conversation."""
    head = [{"role": "system", "content": system}] if system else []
    return head + [message_to_openai(m) for m in messages]


def parse_arguments(arguments: Any) -> tuple[dict[str, Any] | None, str | None]:
    """(parsed object or None, raw text) of a call's `function.arguments`."""
    if isinstance(arguments, dict):
        return arguments, json.dumps(arguments, ensure_ascii=False)
    if not isinstance(arguments, str):
        return None, None if arguments is None else json.dumps(arguments)
    try:
        value = json.loads(arguments)  # "" is malformed too: endpoints send "{}" for a call without arguments
    except json.JSONDecodeError:
        return None, arguments
    return (value, arguments) if isinstance(value, dict) else (None, arguments)


def call_from_openai(data: dict[str, Any], fallback_id: str) -> ToolCall:
    fn = data.get("function") or {}
    arguments, raw = parse_arguments(fn.get("arguments"))
    return ToolCall(
        id=data.get("id") or fallback_id, name=str(fn.get("name") or ""), arguments=arguments, raw_arguments=raw
    )


def message_from_openai(data: dict[str, Any], id_prefix: str = "call_") -> Message:
    """A chat-completions message as one of ours (assistant, user, system or tool)."""
    role = data.get("role") or "assistant"
    if role == "developer":
        role = "system"
    content = text_of(data.get("content"))
    if role == "tool":
        return Message(role="tool", content=content or "", tool_call_id=data.get("tool_call_id"), name=data.get("name"))
    if role != "assistant":
        return Message(role=role, content=content)
    calls = data.get("tool_calls") or []
    if not calls and content and TOOL_CALL_OPEN in content:
        return parse_assistant(content, id_prefix=id_prefix)
    return Message(
        role="assistant",
        content=content if content and content.strip() else None,
        tool_calls=[call_from_openai(c, f"{id_prefix}{i}") for i, c in enumerate(calls) if isinstance(c, dict)],
    )


def request_conversation(
    messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None, tool_choice: Any = None
) -> tuple[str | None, list[Message], list[dict[str, Any]]]:
    """What a chat-completions request puts before a model, as `agentloop serve` renders it: (the policy: its
    system messages joined, None without any; the conversation without them; the tools, none when `tool_choice` is
    "none"). SFT on recorded model calls reads a request through this too, so it trains on the prompt served."""
    parsed = [message_from_openai(dict(m)) for m in messages]
    policy = "\n\n".join(m.content or "" for m in parsed if m.role == "system") or None
    conversation = [m for m in parsed if m.role != "system"]
    return policy, conversation, [] if tool_choice == "none" else [dict(t) for t in tools or []]
