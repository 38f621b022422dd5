"""Safe arithmetic for the retail `calculate` tool: the generic evaluator (pipeline.world.arith), re-exported."""

from __future__ import annotations

from pipeline.world.arith import MAX_LENGTH, ArithmeticError_, evaluate

__all__ = ["MAX_LENGTH", "ArithmeticError_", "evaluate"]
