"""An environment: one domain's worlds behind the functions the loop reaches them through (`memory`: the built-in
in-memory worlds, graded by the loop's grader; `mcp`: each episode's agent-side tools served over MCP, and a
synchronous client that drives them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.environment.memory import Environment
from pipeline.lazy import lazy_exports

if TYPE_CHECKING:
    from pipeline.environment.mcp import McpEnvironmentClient, mcp_app

__all__ = ["Environment", "McpEnvironmentClient", "mcp_app"]

_LAZY = {
    "McpEnvironmentClient": "pipeline.environment.mcp",
    "mcp_app": "pipeline.environment.mcp",
}
"""Exports imported when first used: their module needs the `mcp` SDK."""

__getattr__ = lazy_exports(__name__, _LAZY)
