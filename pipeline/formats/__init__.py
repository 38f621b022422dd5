"""Chat formats by name, and which one a checkpoint's tokenizer calls for.

agentloop     the project's codec (the embedded model): ChatML turns, compact system, hermes calls
hermes        the model's template; `<tool_call>{json}</tool_call>` (Qwen2.5, Hermes, most ChatML models)
qwen3         hermes calls after `<think>…</think>` (thinking kept in `raw`, never in the visible reply)
qwen3_coder   `<tool_call><function=name><parameter=x>…</parameter></function></tool_call>` (Qwen3-Coder, Qwen3.5)
llama3        a JSON object `{"name", "parameters"}`, with or without `<|python_tag|>` (Llama 3.1-3.3)
mistral       `[TOOL_CALLS][{…}]` or `[TOOL_CALLS]name[ARGS]{…}`
generic       a template without tools (e.g. Gemma): schemas and results in the text, hermes calls
compact       the model's template, one line per tool, flattened results, `<tool_call>name(k="v")</tool_call>`
              calls (small instruct models: SmolLM2, Gemma 3 270M)
"""

from __future__ import annotations

from typing import Any

from pipeline.formats.base import ChatFormat, ChatFormatError, single_token_id
from pipeline.formats.codec import (
    ADDED_TOKENS,
    ENDOFTEXT,
    IM_END,
    SPECIAL_TOKENS,
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    CodecConfig,
    CodecMismatchError,
    check_tokenizer,
    codec_hash,
    encode_conversation,
    parse_assistant,
    render_conversation,
)
from pipeline.formats.compact import CodecFormat
from pipeline.formats.compact_template import CompactFormat
from pipeline.formats.probe import TemplateTimeoutError, probe_template, probe_text
from pipeline.formats.template import TemplateFormat

CHATML_STOPS = ("<|im_end|>", "<|endoftext|>")
FORMATS: dict[str, TemplateFormat] = {
    "hermes": TemplateFormat("hermes", "hermes", CHATML_STOPS),
    "qwen3": TemplateFormat("qwen3", "hermes", CHATML_STOPS, thinking=True),
    "qwen3_coder": TemplateFormat("qwen3_coder", "qwen3_coder", CHATML_STOPS, thinking=True),
    "llama3": TemplateFormat("llama3", "llama3", ("<|eot_id|>", "<|eom_id|>"), one_call_per_message=True),
    "mistral": TemplateFormat("mistral", "mistral", ("</s>",), call_id_length=9),
    "generic": TemplateFormat(
        "generic", "hermes", ("<end_of_turn>", "<|im_end|>", "<|eot_id|>", "<|end|>"), tools_in_system=True
    ),
    "compact": CompactFormat("compact", "compact", ("<end_of_turn>", "<|im_end|>", "<|eot_id|>", "<|end|>")),
}
ALIASES = {"qwen2_5": "hermes", "qwen2": "hermes", "llama3_1": "llama3"}
CODEC = "agentloop"


def format_names() -> list[str]:
    return [CODEC, *FORMATS, *ALIASES]


def get_format(name: str, codec_config: Any = None) -> ChatFormat:
    """The format called `name` (`agentloop` takes the checkpoint's codec configuration)."""
    if name == CODEC:
        return CodecFormat(codec_config) if codec_config is not None else CodecFormat()
    key = ALIASES.get(name, name)
    if key not in FORMATS:
        raise ChatFormatError(f"unknown chat format {name!r}: expected one of {', '.join(format_names())}")
    return FORMATS[key]


def detect_format(tokenizer: Any) -> str:
    """The format a tokenizer's chat template calls for; `agentloop` for one without a template that holds the
    codec's tokens. Raises ChatFormatError when neither applies."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):  # several named templates: the default one
        template = template.get("default") or next(iter(template.values()), None)
    if not template:
        try:
            CodecFormat().check_tokenizer(tokenizer)
        except ChatFormatError as exc:
            raise ChatFormatError(
                f"the tokenizer has no chat template, and it cannot carry the agentloop format ({exc}); add a"
                " chat_template to tokenizer_config.json"
            ) from None
        return CODEC
    if "tools" not in template:
        return "generic"
    if "<function=" in template:
        return "qwen3_coder"
    if "<tool_call>" in template:
        return "qwen3" if "<think>" in template else "hermes"
    if "[TOOL_CALLS]" in template:
        return "mistral"
    if "<|python_tag|>" in template or "<|start_header_id|>" in template:
        return "llama3"
    return "hermes"


__all__ = [
    "ADDED_TOKENS",
    "ChatFormat",
    "ChatFormatError",
    "CodecConfig",
    "CodecFormat",
    "CodecMismatchError",
    "CompactFormat",
    "ENDOFTEXT",
    "IM_END",
    "SPECIAL_TOKENS",
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "TemplateFormat",
    "TemplateTimeoutError",
    "check_tokenizer",
    "codec_hash",
    "encode_conversation",
    "parse_assistant",
    "probe_template",
    "probe_text",
    "render_conversation",
    "single_token_id",
]
