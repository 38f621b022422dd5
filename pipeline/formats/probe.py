"""A chat template is rendered once, under a time bound, before any model uses it.

A template is a program: one that loops (nested `range` loops, a macro that calls itself) imports fine and then
hangs every prompt of a measurement. transformers renders templates in Jinja's immutable sandbox, which stops
unsafe attribute access and caps a single `range`, but bounds neither time nor recursion. So at `model import
--chat-template` and when a checkpoint is loaded as an agent, the format renders a probe conversation (a system
turn, the customer, a tool call, its result, tools given) with the same call a run makes; a render that takes
longer than `PROBE_BOUND_S` is stopped and the template refused in one line, naming where it came from and the
bound.

How a render over its time is stopped: a trace function on the rendering thread (`sys.settrace`, set only for the
probe) raises at the first line the template's compiled Python runs after the deadline, so the render ends within
a line of the bound and the thread carries on; nothing is left running. (A single C-level operation that never
returns, such as a string multiplied a billion times, cannot be stopped this way; the sandbox keeps such operations
out of reach only in part.)
"""

from __future__ import annotations

import functools
import logging
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pipeline.formats.base import ChatFormatError
from pipeline.rollout import Message, ToolCall

log = logging.getLogger(__name__)
PROBE_BOUND_S = 5.0  # a real template renders the probe in milliseconds
T = TypeVar("T")

PROBE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Look up an order.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string", "description": "The order's id."}},
                "required": ["order_id"],
            },
        },
    }
]
PROBE_MESSAGES = [
    Message(role="user", content="Where is my order #W001?"),
    Message(
        role="assistant",
        content=None,
        tool_calls=[ToolCall(id="call_0", name="get_order", arguments={"order_id": "#W001"})],
    ),
    Message(role="tool", content='{"status": "shipped"}', tool_call_id="call_0", name="get_order"),
    Message(role="assistant", content="It has shipped."),
    Message(role="user", content="Thanks."),
]


class TemplateTimeoutError(ChatFormatError):
    """A chat template that did not render the probe conversation within the bound."""


class _OutOfTime(BaseException):
    """Raised inside the render when its time is up (a BaseException: no `except Exception` swallows it)."""


def bounded(call: Callable[[], T], bound_s: float) -> T:
    """`call()` stopped after `bound_s` seconds (`_OutOfTime`), at the next Python call it makes or the next line a
    compiled template (code named `<template>`, as Jinja names it) runs; other code is traced per call only, so
    the probe's own cost stays small."""
    deadline = time.monotonic() + bound_s

    def line(frame: Any, event: str, arg: Any) -> Any:
        if time.monotonic() > deadline:
            raise _OutOfTime
        return line

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if time.monotonic() > deadline:
            raise _OutOfTime
        return line if frame.f_code.co_filename == "<template>" else None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        return call()
    finally:
        sys.settrace(previous)


def _refuse(where: str, bound_s: float, recursed: bool) -> TemplateTimeoutError:
    if recursed:
        return TemplateTimeoutError(
            f"{where}: the chat template recursed past Python's limit rendering a short conversation; fix or replace"
            " the template"
        )
    return TemplateTimeoutError(
        f"{where}: the chat template did not render a short conversation within {bound_s:g}s"
        " (pipeline.formats.probe.PROBE_BOUND_S); it loops — fix or replace the template"
    )


def _compiled(template: Any) -> None:
    """Compile the template as transformers does (it keeps the result), so the bound holds for rendering alone."""
    from transformers.utils import chat_template_utils

    compile_template = getattr(chat_template_utils, "_compile_jinja_template", None)
    if compile_template is not None and isinstance(template, str):
        try:
            compile_template(template)
        except Exception as exc:  # noqa: BLE001 - a template that does not compile is the format's to refuse
            log.debug("chat template does not compile (%s)", exc)


def _probe(render: Callable[[], Any], where: str, bound_s: float) -> bool:
    """Whether `render` rendered within the bound; False when the template refused it; raises when it loops."""
    try:
        bounded(render, bound_s)
        return True
    except _OutOfTime:
        raise _refuse(where, bound_s, recursed=False) from None
    except RecursionError:
        raise _refuse(where, bound_s, recursed=True) from None
    except Exception as exc:  # noqa: BLE001 - the probe bounds time only; what a template refuses is the format's
        log.debug("%s: the chat template refused the probe conversation (%s)", where, exc)
        return False


def probe_template(fmt: Any, tokenizer: Any, where: str, bound_s: float = PROBE_BOUND_S) -> None:
    """Render the probe conversation as a run would (`fmt.render` with `tokenizer`'s chat template) within
    `bound_s` seconds; a template that loops or recurses without end is refused (TemplateTimeoutError naming
    `where` and the bound)."""
    if getattr(tokenizer, "chat_template", None):
        _compiled(tokenizer.chat_template)
        _probe(lambda: fmt.render(PROBE_MESSAGES, PROBE_TOOLS, "Be helpful.", tokenizer), where, bound_s)


def probe_text(template: str, where: str, bound_s: float = PROBE_BOUND_S) -> None:
    """The same probe for a template's text alone (rendered as transformers renders a tokenizer's), for a template
    file checked before anything is written."""
    from transformers.utils.chat_template_utils import render_jinja_template

    conversation: list[dict[str, Any]] = [
        {"role": "system", "content": "Be helpful."},
        {"role": "user", "content": "Where is my order #W001?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "get_order", "arguments": {"order_id": "#W001"}}}
        ]},
        {"role": "tool", "content": '{"status": "shipped"}', "tool_call_id": "call_0", "name": "get_order"},
        {"role": "assistant", "content": "It has shipped."},
        {"role": "user", "content": "Thanks."},
    ]  # fmt: skip
    _compiled(template)
    plain: list[dict[str, Any]] = [{"role": "user", "content": "Where is my order #W001?"}]
    tries: list[tuple[list[dict[str, Any]], Any]] = [(conversation, PROBE_TOOLS), (plain, None)]
    for messages, tools in tries:  # the plain one for a template that takes no tool turns
        render = functools.partial(
            render_jinja_template, [messages], tools=tools, chat_template=template, add_generation_prompt=True,
            bos_token="<s>", eos_token="</s>",
        )  # fmt: skip
        if _probe(render, where, bound_s):
            return
