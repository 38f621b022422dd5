"""Tool registration for the retail tools: the generic registry (pipeline.world.tools), re-exported here."""

from __future__ import annotations

from pipeline.world.tools import ToolError, ToolKind, ToolRegistry, ToolSpec, _parse_docstring, make_tool

__all__ = ["ToolError", "ToolKind", "ToolRegistry", "ToolSpec", "_parse_docstring", "make_tool"]
