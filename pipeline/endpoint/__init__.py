"""One client for OpenAI-compatible chat-completions endpoints (agents, LLM customers, the judge), and its wire
format."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.endpoint.wire import (
    call_from_openai,
    call_to_openai,
    message_from_openai,
    request_conversation,
    text_of,
    to_openai_messages,
)
from pipeline.lazy import lazy_exports

if TYPE_CHECKING:
    from pipeline.endpoint.client import ChatClient, EndpointConfig

__all__ = [
    "ChatClient",
    "EndpointConfig",
    "call_from_openai",
    "call_to_openai",
    "message_from_openai",
    "request_conversation",
    "text_of",
    "to_openai_messages",
]

_LAZY = {"ChatClient": "pipeline.endpoint.client", "EndpointConfig": "pipeline.endpoint.client"}
"""Exports imported when first used: their modules need openai."""

__getattr__ = lazy_exports(__name__, _LAZY)
