"""The safe `calculate` arithmetic: right answers for plain arithmetic, a clean refusal for anything else."""

from __future__ import annotations

import builtins
import contextlib

import pytest

from pipeline.world.arith import MAX_LENGTH, ExpressionError, evaluate


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2 + 2", 4.0),
        ("2 + 3 * (4 - 1) / 2", 6.5),
        ("(1 + 2) * 3", 9.0),
        ("10 / 4", 2.5),
        ("-5 + 3", -2.0),
        ("+5 - -3", 8.0),
        ("--1", 1.0),
        ("  96.35 - 90.43  ", pytest.approx(5.92)),
        ("1e3 / 8", 125.0),
        ("0.1 + 0.2", pytest.approx(0.3)),
        ("1_000 + 1", 1001.0),
        ("+".join(["1"] * 200), 200.0),
    ],
)
def test_plain_arithmetic(expression, expected):
    result = evaluate(expression)
    assert isinstance(result, float)
    assert result == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('true')", "only numbers"),  # calls
        ("abs(-1)", "only numbers"),
        ("x + 1", "only numbers"),  # names
        ("(1).real", "only numbers"),  # attributes
        ("2 ** 10", "only numbers"),  # power is not offered: 9**9**9 would hang
        ("7 // 2", "only numbers"),
        ("7 % 2", "only numbers"),
        ("1 << 4", "only numbers"),
        ("~1", "only numbers"),
        ("1 < 2", "only numbers"),
        ("True + 1", "only numbers"),  # booleans are not numbers here
        ("'a' * 3", "only numbers"),
        ("1j * 1j", "only numbers"),
        ("[1, 2]", "only numbers"),
        ("(lambda: 1)()", "only numbers"),
        ("1 if 1 else 2", "only numbers"),
        ("1 / 0", "division by zero"),
        ("1 / (2 - 2)", "division by zero"),
        ("", "not a valid arithmetic expression"),
        ("1 +", "not a valid arithmetic expression"),
        ("import os", "not a valid arithmetic expression"),
        ("1\x00", "not a valid arithmetic expression"),
        ("(" * 240 + "1" + ")" * 240, "not a valid arithmetic expression"),  # deeper than the parser allows
        ("1" * (MAX_LENGTH + 1), f"longer than {MAX_LENGTH}"),
        ("9" * 400, "too large"),  # an integer no float can hold
        ("9" * 240 + " * " + "9" * 240, "too large"),
        ("9" * 400 + " / 3", "too large"),
        ("1e308 * 10", "too large"),  # infinity
        ("1e308 * 10 - 1e308 * 10", "too large"),  # nan
    ],
)
def test_refuses_everything_but_plain_arithmetic(expression, message):
    with pytest.raises(ExpressionError, match=message):
        evaluate(expression)


def test_deep_unary_chain_is_evaluated_or_refused_never_crashes():
    expression = "-" * (MAX_LENGTH - 2) + "1"  # an even number of minus signs
    with contextlib.suppress(ExpressionError):  # refusing is fine; any other exception (RecursionError) is not
        assert evaluate(expression) == 1.0


def test_never_calls_eval_or_exec(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("eval/exec/compile of user text must not happen")

    for name in ("eval", "exec"):
        monkeypatch.setattr(builtins, name, forbidden)
    assert evaluate("6 * 7") == 42.0
    with pytest.raises(ExpressionError):
        evaluate("__import__('os')")
