"""The one codec: how a conversation becomes model text, and how model text becomes a message.

Evaluation, SFT rendering, GRPO rollouts and the OpenAI-compatible server all go through these functions, so
the agent that is trained is read exactly like the agent that is gated.

Template (ChatML turns, Hermes-style tool calls, which vLLM's hermes parser also reads)::

    <|im_start|>system\\n{policy + tools}<|im_end|>\\n
    <|im_start|>user\\n{text}<|im_end|>\\n
    <|im_start|>assistant\\n{text and/or <tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>}<|im_end|>\\n
    <|im_start|>tool\\n{tool result}<|im_end|>\\n

Rules, applied everywhere:

- Text and tool calls mixed: the tool calls win (they are executed); the text outside the calls is kept in
  `content`, joined by newlines.
- Broken JSON inside a call: a ToolCall with `arguments=None`, the call's text kept in `raw_arguments`, and the
  name recovered when it can be read. An unknown tool name is parsed as-is (the world refuses it).
- An unclosed `<tool_call>` runs to the next `<tool_call>` or the end of the text.
- Token ids are made per segment (one role header, one message body...), never by re-tokenizing joined text, so
  the prompt for turn t is an exact prefix of the whole conversation's ids.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.digest import sha256_json
from pipeline.errors import InputError
from pipeline.rollout import Message, ToolCall

# 2: order items `Name (options) item <id>`; 3: variants `(options) item <id>`; 4: `Name <id> (options)`;
# 5: payment methods `visa credit card ending in 9079 credit_card_0012648`
CODEC_VERSION = 5
IM_START, IM_END, ENDOFTEXT = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"
SPECIAL_TOKENS: tuple[str, ...] = (ENDOFTEXT, IM_START, IM_END)
"""Control tokens: never produced by tokenizing ordinary text."""
ADDED_TOKENS: tuple[str, ...] = (TOOL_CALL_OPEN, TOOL_CALL_CLOSE)
"""Whole tokens that stay visible in decoded text."""


_FULL_TOOLS_HEAD = (
    "# Tools\n\nYou may call one or more functions to assist with the user query. "
    "Function signatures are within <tools></tools>:\n<tools>"
)
_FULL_TOOLS_TAIL = (
    "</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n'
    "</tool_call>"
)
_COMPACT_TOOLS_HEAD = 'Tools (call as <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>):'
_CALL_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.S)  # unclosed: to next/end
_NAME_RE = re.compile(r"""["']name["']\s*:\s*["']([^"'\\]*)["']""")


class CodecMismatchError(InputError, ValueError):
    """A checkpoint was trained with a different template or codec configuration than the one in use."""


class CodecConfig(BaseModel):
    """The choices that change what the model sees; recorded in every checkpoint through `codec_hash`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system: Literal["full", "compact", "none"] = Field(
        default="full",
        description="'full': the policy text and JSON tool schemas; 'compact': a short policy summary and one"
        " line per tool, for tiny models whose context is short; 'none': no system turn (a model trained only"
        " on this project's conversations, which never reads it, saves a third of its compute).",
    )
    tool_results: Literal["json", "compact"] = Field(
        default="json",
        description="'json': tool results verbatim; 'compact': JSON flattened to `key: value` lines and one line"
        " per record; an order's items as `Name 1234567890 (color blue, size M) | product_id ... | price ...`,"
        " a product's variants as `(color blue, size M) item 1234567890 | available | price 50.88`, a payment"
        " method as `visa credit card ending in 9079 credit_card_0012648`).",
    )
    policy_summary: str = Field(
        default="",
        description="Policy text used instead of the full policy in compact mode (a domain's own summary, e.g."
        " retail's `POLICY_SUMMARY`); empty: the full policy.",
    )


def codec_hash(config: CodecConfig | None = None) -> str:
    """Identity of the codec: template strings, special tokens and configuration (16 hex digits)."""
    config = config or CodecConfig()
    spec = {
        "version": CODEC_VERSION,
        "special": SPECIAL_TOKENS,
        "added": ADDED_TOKENS,
        "templates": [_FULL_TOOLS_HEAD, _FULL_TOOLS_TAIL, _COMPACT_TOOLS_HEAD, _CALL_RE.pattern],
        "config": config.model_dump(),
    }
    return sha256_json(spec, compact=False, ensure_ascii=True)[:16]


# ---- assistant text <-> message ------------------------------------------------------------------------------
def parse_assistant(text: str, id_prefix: str = "call_") -> Message:
    """Read a model's output as an assistant message (text, or tool calls with any text kept in content)."""
    body = text.split(IM_END, 1)[0]
    calls = [_parse_call(m.group(1), f"{id_prefix}{i}") for i, m in enumerate(_CALL_RE.finditer(body))]
    outside = [p.strip() for p in _CALL_RE.split(body)[::2]]  # split() interleaves the captured call bodies
    content = "\n".join(p for p in outside if p) or None
    return Message(role="assistant", content=content, tool_calls=calls, raw=text)


def _parse_call(body: str, call_id: str) -> ToolCall:
    text = body.strip()
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("name"), str):
        args = obj.get("arguments", {})
        if isinstance(args, str):  # some models emit the arguments as a JSON string
            with contextlib.suppress(json.JSONDecodeError):
                args = json.loads(args)
        if isinstance(args, dict):
            return ToolCall(
                id=call_id, name=obj["name"], arguments=args, raw_arguments=json.dumps(args, ensure_ascii=False)
            )
        return ToolCall(id=call_id, name=obj["name"], arguments=None, raw_arguments=text)
    match = _NAME_RE.search(text)
    return ToolCall(id=call_id, name=match.group(1) if match else "", arguments=None, raw_arguments=text)


def format_tool_call(call: ToolCall) -> str:
    if call.arguments is None:
        inner = call.raw_arguments if call.raw_arguments is not None else json.dumps({"name": call.name})
    else:
        inner = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    return f"{TOOL_CALL_OPEN}\n{inner}\n{TOOL_CALL_CLOSE}"


def format_assistant(message: Message) -> str:
    """The canonical text of an assistant message; `format_assistant(parse_assistant(x)) == x` for canonical x."""
    parts = [message.content.strip()] if message.content and message.content.strip() else []
    parts += [format_tool_call(c) for c in message.tool_calls]
    return "\n".join(parts)


# ---- tool results and system prompt ---------------------------------------------------------------------------
def compact_tool_result(content: str) -> str:
    """Flatten a JSON object/array result to lines, so values the agent must repeat are easy to find."""
    try:
        value = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        return content
    if not isinstance(value, dict | list):
        return content
    if isinstance(value, list):
        return "\n".join(_row(v) for v in value) or "(none)"
    lines = []
    for key, item in value.items():
        rows = _as_rows(item)
        if rows is None:
            lines.append(f"{key}: {_inline(item)}")
        elif rows and all(_is_payment_method(r) for r in rows):
            lines.append(f"{key}:")
            methods = {r["id"]: r for r in rows}
            lines.extend(_payment_row(r, methods) for r in rows)
        elif rows:
            lines.append(f"{key}:")
            lines.extend(_row(r) for r in rows)
        else:
            lines.append(f"{key}: (none)")
    return "\n".join(lines)


def _scalar(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def _is_flat(v: Any) -> bool:
    return isinstance(v, dict) and all(not isinstance(x, dict | list) for x in v.values())


def _inline(v: Any) -> str:
    if isinstance(v, list) and all(not isinstance(x, dict | list) for x in v):
        return " ".join(_scalar(x) for x in v) if v else "(none)"
    if _is_flat(v):
        return ", ".join(f"{k}={_scalar(x)}" for k, x in v.items())
    if isinstance(v, dict | list):
        return json.dumps(v, ensure_ascii=False)
    return _scalar(v)


def _as_rows(v: Any) -> list | None:
    """A collection of records (a list, or a dict keyed by id) → its records; anything else → None."""
    if isinstance(v, list) and (not v or all(isinstance(x, dict) for x in v)):
        return v
    if isinstance(v, dict) and v and all(isinstance(x, dict) for x in v.values()):
        return list(v.values())
    return None


_ORDER_ITEM = ("name", "options", "item_id")


def _row(record: Any) -> str:
    if not isinstance(record, dict):
        return _inline(record)
    cells = []
    if all(k in record for k in _ORDER_ITEM[1:]) and _is_flat(record["options"]):
        # The copy circuit of a tiny model continues whatever followed the last three tokens it wrote. An order's
        # item reads `Board Game 4780751996 (players 2-4, theme party)`: its id right after the product name, so
        # an agent that names the item ("the Board Game") copies the id of that line, not of any line. After
        # `(options) item` (version 2) those three tokens were `) item ` on every line of the order, and the
        # model copied the id of the wrong one. A product's variants (no name) keep `(options) item <id>`.
        options = ", ".join(f"{k} {_scalar(v)}" for k, v in record["options"].items())
        if isinstance(record.get("name"), str):
            cells.append(f"{record['name']} {record['item_id']} ({options})")
        else:
            cells.append(f"({options}) item {record['item_id']}")
        record = {k: v for k, v in record.items() if k not in _ORDER_ITEM}
    for key, v in record.items():
        if key == "available" and isinstance(v, bool):
            cells.append("available" if v else "unavailable")
        elif _is_flat(v):
            cells.append(_inline(v))
        else:
            cells.append(f"{key} {_inline(v)}")
    return " | ".join(cells)


def _is_payment_method(record: Any) -> bool:
    return isinstance(record, dict) and isinstance(record.get("source"), str) and isinstance(record.get("id"), str)


_SOURCE_WORDS = {"paypal": "PayPal account"}
"""How the compact codec names the only method of its source where the source's own words would not do."""


def _payment_words(record: dict, methods: Mapping[str, dict]) -> str:
    """A payment method in the words its owner would use, unambiguous among `methods`: a card by brand and last
    four digits, the only method of its source by the source, anything else by source and id."""
    source = record["source"]
    words = source.replace("_", " ")
    same = [m for m in methods.values() if m.get("source") == source]
    if record.get("last_four") is not None:
        brand, last_four = record.get("brand"), record["last_four"]
        twins = [m for m in same if m.get("brand") == brand and m.get("last_four") == last_four]
        if len(twins) == 1:
            return f"{brand} {words} ending in {last_four}"
    elif len(same) == 1:
        return _SOURCE_WORDS.get(source, words)
    return f"{words} {record['id']}"


def _payment_row(record: dict, methods: Mapping[str, dict]) -> str:
    """`visa credit card ending in 9079 credit_card_0012648`, `gift card gift_card_0880141 | balance 68.0`.

    The words a customer uses for the method, then its id (as order items put the id after the name): an agent
    repeating "visa credit card ending in 9079" continues with that line's id. As `source ... | id ...` (version
    4) the id came before anything the customer said, and the model paid with whichever method it saw first.
    A domain's scripted participants say the same words (retail: `describe_payment`), so what the customer says
    is what the result shows."""
    said = _payment_words(record, methods)
    cells = [said if said.endswith(record["id"]) else f"{said} {record['id']}"]
    cells += [f"{k} {_inline(v)}" for k, v in record.items() if k not in ("source", "id", "brand", "last_four")]
    return " | ".join(cells)


def tool_signature(schema: Mapping[str, Any]) -> str:
    """`name(arg, list_arg[], optional_arg?)` from an OpenAI function schema."""
    fn = schema.get("function", schema)
    params = fn.get("parameters", {})
    required = set(params.get("required", []))
    args = []
    for name, prop in params.get("properties", {}).items():
        suffix = "[]" if prop.get("type") == "array" else ""
        args.append(f"{name}{suffix}" + ("" if name in required else "?"))
    return f"{fn['name']}({', '.join(args)})"


def render_system(policy: str | None, tools: Sequence[Mapping[str, Any]], config: CodecConfig | None = None) -> str:
    """The system prompt: policy (or its summary) and the tools."""
    config = config or CodecConfig()
    if config.system == "none":
        return ""
    if config.system == "compact":
        parts = [config.policy_summary or policy.strip()] if policy else []
        if tools:
            parts.append("\n".join([_COMPACT_TOOLS_HEAD, *(tool_signature(t) for t in tools)]))
    else:
        parts = [policy.strip()] if policy else []
        if tools:
            schemas = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
            parts.append(f"{_FULL_TOOLS_HEAD}\n{schemas}\n{_FULL_TOOLS_TAIL}")
    return "\n\n".join(parts)


# ---- conversations → segments → token ids -----------------------------------------------------------------------
@dataclass(frozen=True)
class Segment:
    """A piece of rendered text that is tokenized on its own; `train` marks assistant output."""

    text: str
    role: str
    train: bool = False
    message: int | None = None  # index in the messages list; None for the system prompt


def _header(role: str) -> str:
    return f"{IM_START}{role}\n"


def render_conversation(
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]],
    policy: str | None,
    config: CodecConfig | None = None,
    *,
    add_generation_prompt: bool = False,
    raw: bool = False,
) -> list[Segment]:
    """Segments of the whole conversation; `raw` renders assistant messages from `Message.raw` when present."""
    config = config or CodecConfig()
    system = render_system(policy, tools, config)
    segs = [Segment(f"{_header('system')}{system}{IM_END}\n", "system")] if system else []
    for i, m in enumerate(messages):
        if m.role == "assistant":
            body = m.raw.split(IM_END, 1)[0] if raw and m.raw is not None else format_assistant(m)
            segs += [
                Segment(_header("assistant"), "assistant", False, i),
                Segment(body, "assistant", True, i),
                Segment(IM_END, "assistant", True, i),
                Segment("\n", "assistant", False, i),
            ]
            continue
        content = m.content or ""
        if m.role == "tool" and config.tool_results == "compact":
            content = compact_tool_result(content)
        segs.append(Segment(f"{_header(m.role)}{content}{IM_END}\n", m.role, False, i))
    if add_generation_prompt:
        segs.append(Segment(_header("assistant"), "assistant", False, len(messages)))
    return segs


def render_prompt(
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]],
    policy: str | None,
    config: CodecConfig | None = None,
) -> str:
    """The prompt text for the next assistant turn (for text-in/text-out backends)."""
    segs = render_conversation(messages, tools, policy, config, add_generation_prompt=True)
    return "".join(s.text for s in segs)


@dataclass
class Encoded:
    ids: list[int]
    assistant_mask: list[int]  # 1 on assistant output tokens (message body and its end-of-turn token)

    def assistant_spans(self) -> list[tuple[int, int]]:
        """[start, end) of each run of assistant tokens; each run ends with the end-of-turn token."""
        spans, start = [], None
        for i, m in enumerate([*self.assistant_mask, 0]):
            if m and start is None:
                start = i
            elif not m and start is not None:
                spans.append((start, i))
                start = None
        return spans


def encode_conversation(
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]],
    policy: str | None,
    tokenizer: Any,
    config: CodecConfig | None = None,
    *,
    add_generation_prompt: bool = False,
    raw: bool = False,
    completions: Mapping[int, Sequence[int]] | None = None,
    memo: SegmentIds | None = None,
) -> Encoded:
    """Token ids and assistant mask, by concatenating per-segment token ids.

    `completions` maps a message index to the token ids the model actually generated for that assistant
    message (without the end-of-turn token); they replace the tokenized body, so a rollout is scored on exactly
    the tokens that were sampled. `memo` keeps the ids of segments already tokenized (an agent's prompts repeat
    every earlier segment each turn), so only new text goes through the tokenizer.
    """
    segs = render_conversation(messages, tools, policy, config, add_generation_prompt=add_generation_prompt, raw=raw)
    texts = [s.text for s in segs]
    if memo is not None:
        encoded = memo.ids(tokenizer, texts)
    else:
        encoded = tokenizer(texts, add_special_tokens=False)["input_ids"]
    ids: list[int] = []
    mask: list[int] = []
    for seg, seg_ids in zip(segs, encoded, strict=True):
        if completions and seg.train and seg.message is not None and seg.message in completions and seg.text != IM_END:
            seg_ids = list(completions[seg.message])
        ids.extend(seg_ids)
        mask.extend([int(seg.train)] * len(seg_ids))
    return Encoded(ids, mask)


class SegmentIds:
    """Token ids of segment texts already tokenized, per tokenizer; a segment's ids do not depend on its
    neighbours (each is tokenized on its own), so a remembered one is exactly what the tokenizer would give."""

    def __init__(self, max_texts: int = 50_000) -> None:
        self.max_texts = max_texts
        self.known: dict[int, tuple[Any, dict[str, list[int]]]] = {}  # id(tokenizer) -> (tokenizer, text -> ids)

    def ids(self, tokenizer: Any, texts: list[str]) -> list[list[int]]:
        held = self.known.get(id(tokenizer))
        if held is None or held[0] is not tokenizer:
            held = self.known[id(tokenizer)] = (tokenizer, {})
        known = held[1]
        new = list(dict.fromkeys(t for t in texts if t not in known))
        if len(known) + len(new) > self.max_texts:  # start over, keeping this call's texts
            kept = {t: known[t] for t in texts if t in known}
            known.clear()
            known.update(kept)
        if new:
            known.update(zip(new, tokenizer(new, add_special_tokens=False)["input_ids"], strict=True))
        return [known[t] for t in texts]


def decode_assistant(tokenizer: Any, ids: Sequence[int]) -> str:
    """Text of generated ids (end-of-turn token dropped; other added tokens kept)."""
    end = tokenizer.convert_tokens_to_ids(IM_END)
    ids = list(ids)
    if end in ids:
        ids = ids[: ids.index(end)]
    return tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def check_tokenizer(tokenizer: Any) -> None:
    """Every codec token must be a single token of `tokenizer`, and decoding must not alter text."""
    for tok in (*SPECIAL_TOKENS, *ADDED_TOKENS):
        ids = tokenizer.encode(tok, add_special_tokens=False)
        if len(ids) != 1:
            raise CodecMismatchError(f"tokenizer does not hold the codec token {tok!r} as one token (got {ids})")
