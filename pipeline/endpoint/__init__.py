"""One client for OpenAI-compatible chat-completions endpoints (agents, LLM customers, the judge), and its wire
format."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from pipeline.endpoint.wire import call_from_openai, call_to_openai, message_from_openai, text_of, to_openai_messages

if TYPE_CHECKING:
    from pipeline.endpoint.client import ChatClient, EndpointConfig

__all__ = [
    "ChatClient",
    "EndpointConfig",
    "call_from_openai",
    "call_to_openai",
    "message_from_openai",
    "text_of",
    "to_openai_messages",
]

_LAZY = {"ChatClient": "pipeline.endpoint.client", "EndpointConfig": "pipeline.endpoint.client"}
"""Exports imported when first used: their modules need openai."""


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
