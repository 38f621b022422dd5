"""Bring your own environment: learn a world model by running a domain's tools, and grow tasks and scripted
participants from it for any domain."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.explore.probe import explore
from pipeline.lazy import lazy_exports

if TYPE_CHECKING:
    from pipeline.explore.llm import LLMRoles, LLMSpec, with_llm

__all__ = ["LLMRoles", "LLMSpec", "explore", "with_llm"]

_LAZY = {"LLMRoles": "pipeline.explore.llm", "LLMSpec": "pipeline.explore.llm", "with_llm": "pipeline.explore.llm"}
"""Exports imported when first used: their modules need openai."""

__getattr__ = lazy_exports(__name__, _LAZY)
