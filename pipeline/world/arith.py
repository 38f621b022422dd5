"""Safe arithmetic for any domain's `calculate` tool: an AST walk over numbers and + - * / ( ), never `eval`."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

from pipeline.errors import WorldError

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
MAX_LENGTH = 500


class ExpressionError(WorldError, ValueError):
    """An expression that is not plain arithmetic, or cannot be evaluated."""


def evaluate(expression: str) -> float:
    """Evaluate plain arithmetic.

    >>> evaluate("2 + 3 * (4 - 1) / 2")
    6.5
    >>> evaluate("__import__('os')")
    Traceback (most recent call last):
    ...
    pipeline.world.arith.ExpressionError: only numbers, + - * / and parentheses are allowed
    """
    if len(expression) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ExpressionError(f"not a valid arithmetic expression: {expression!r}") from None
    try:
        value = float(_walk(tree.body))
    except OverflowError:  # e.g. a 300-digit integer, or a quotient too large for a float
        raise ExpressionError("the result is too large") from None
    except RecursionError:
        raise ExpressionError("the expression is nested too deeply") from None
    if not math.isfinite(value):
        raise ExpressionError("the result is too large")
    return value


def _walk(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _walk(node.left), _walk(node.right)
        if isinstance(node.op, ast.Div) and right == 0:
            raise ExpressionError("division by zero")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_walk(node.operand))
    raise ExpressionError("only numbers, + - * / and parentheses are allowed")
