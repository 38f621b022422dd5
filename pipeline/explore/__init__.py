"""Bring your own environment: learn a world model by running a domain's tools, and grow tasks and scripted
participants from it for any domain."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from pipeline.explore.probe import explore

if TYPE_CHECKING:
    from pipeline.explore.llm import LLMRoles, LLMSpec, with_llm

__all__ = ["LLMRoles", "LLMSpec", "explore", "with_llm"]

_LAZY = {"LLMRoles": "pipeline.explore.llm", "LLMSpec": "pipeline.explore.llm", "with_llm": "pipeline.explore.llm"}
"""Exports imported when first used: their modules need openai."""


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
