"""JSON from a model or an endpoint is read with a bound on its nesting: a reply 100,000 deep is one more unreadable
reply (a ValueError its reader already handles), never a RecursionError."""

from __future__ import annotations

import json

import pytest

from pipeline import jsondepth
from pipeline.formats.parsers import PARSERS
from pipeline.grading.llm_judge import parse_confirmation, parse_judgement

DEEP = "[" * 100_000 + "]" * 100_000


def test_a_value_nested_past_the_bound_is_a_decode_error():
    with pytest.raises(json.JSONDecodeError, match="nested deeper than 100"):
        jsondepth.loads(DEEP)
    with pytest.raises(json.JSONDecodeError, match="nested deeper"):
        jsondepth.raw_decode('x {"a": ' + DEEP + "}", 2)
    assert jsondepth.loads("[" * 100 + "]" * 100) == json.loads("[" * 100 + "]" * 100)
    assert jsondepth.raw_decode('ab {"a": [1]} [[[[[', 3) == ({"a": [1]}, 13)


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_a_tool_call_nested_100000_deep_is_not_a_crash(name):
    text = '<tool_call>{"name": "get_order", "arguments": ' + DEEP + "}</tool_call>"
    PARSERS[name](text, "call_", None)  # parsed as the parser reads any unreadable call


def test_a_judge_answer_nested_100000_deep_is_an_unreadable_answer():
    with pytest.raises(ValueError):
        parse_confirmation('{"confirmed": ' + DEEP + "}")
    with pytest.raises(ValueError):
        parse_judgement('{"items": ' + DEEP + "}", 1)
