"""Formats that render with the model's own chat template (`tokenizer.apply_chat_template`, tools given as
schemas, tool-call arguments as objects) and read the output with a family's tool-call parser.

History is re-rendered by the template on every turn, so what the model sees of its earlier turns is what its
template makes of them: Qwen3 keeps the thinking of the turns after the last customer message (passed back as
`reasoning_content`, read from the message's `raw` text) and drops the rest; Llama 3.1 takes one call per
assistant message (several are rendered as consecutive messages). The prompt of turn t is then not always an
extension of turn t-1's ids; the `hf` backend's key/value cache reuses the common prefix only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.digest import sha256_json
from pipeline.formats.base import ChatFormatError, single_token_id
from pipeline.formats.parsers import PARSERS, split_thinking
from pipeline.rollout import Message


@dataclass(frozen=True)
class TemplateFormat:
    """A family's chat template conventions and tool-call syntax."""

    name: str
    parser: str
    stops: tuple[str, ...]
    thinking: bool = False
    one_call_per_message: bool = False
    call_id_length: int | None = None  # Mistral's templates want 9 alphanumerics
    tools_in_system: bool = False  # a template without tools: schemas and results as text (hermes syntax)
    template_kwargs: Mapping[str, Any] = field(default_factory=dict)

    # ---- rendering ----------------------------------------------------------------------------------------------
    def _call_id(self, call_id: str | None) -> str | None:
        if self.call_id_length is None or call_id is None:
            return call_id
        return hashlib.sha256(call_id.encode()).hexdigest()[: self.call_id_length]

    def template_messages(
        self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]], policy: str | None
    ) -> list[dict[str, Any]]:
        """Our messages as the dicts chat templates read (content never None, arguments as objects)."""
        from pipeline.formats.codec import CodecConfig, format_tool_call, render_system

        system = render_system(policy, tools, CodecConfig()) if self.tools_in_system else policy
        out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        for m in messages:
            if m.role in ("tool", "user") and self.tools_in_system:  # such templates want user/model turns
                text = f"<tool_response>\n{m.content or ''}\n</tool_response>" if m.role == "tool" else m.content
                if len(out) > int(bool(system)) and out[-1]["role"] == "user":
                    out[-1]["content"] += "\n" + (text or "")
                else:
                    out.append({"role": "user", "content": text or ""})
            elif m.role == "tool":
                out.append(
                    {"role": "tool", "tool_call_id": self._call_id(m.tool_call_id), "name": m.name or "",
                     "content": m.content or ""}
                )  # fmt: skip
            elif m.role == "assistant":
                out += self._assistant(m, format_tool_call)
            else:
                out.append({"role": m.role, "content": m.content or ""})
        return out

    def _assistant(self, m: Message, format_tool_call: Any) -> list[dict[str, Any]]:
        content = m.content or ""
        if self.tools_in_system:
            text = "\n".join([content, *(format_tool_call(c) for c in m.tool_calls)]).strip()
            return [{"role": "assistant", "content": text}]
        calls = [
            {
                "id": self._call_id(c.id),
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": c.raw_arguments or "" if c.arguments is None else c.arguments,
                },
            }
            for c in m.tool_calls
        ]
        base: dict[str, Any] = {"role": "assistant", "content": content}
        if self.thinking and m.raw is not None:
            reasoning, _ = split_thinking(m.raw)
            if reasoning is not None:
                base["reasoning_content"] = reasoning
        if not calls:
            return [base]
        if self.one_call_per_message and len(calls) > 1:
            return [{**base, "tool_calls": calls[:1]}] + [
                {"role": "assistant", "content": "", "tool_calls": [c]} for c in calls[1:]
            ]
        return [{**base, "tool_calls": calls}]

    def render(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]],
        policy: str | None,
        tokenizer: Any,
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        from jinja2 import TemplateError

        self.check_tokenizer(tokenizer)
        conversation = self.template_messages(messages, tools, policy)
        schemas = None if self.tools_in_system or not tools else [dict(t) for t in tools]
        try:
            return tokenizer.apply_chat_template(
                conversation,
                tools=schemas,
                add_generation_prompt=add_generation_prompt,
                tokenize=False,
                **dict(self.template_kwargs),
            )
        except TemplateError as exc:
            raise ChatFormatError(
                f"format {self.name!r}: the model's chat template refused the conversation: {exc}"
            ) from exc

    def prompt_ids(
        self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]], policy: str | None, tokenizer: Any
    ) -> list[int]:
        text = self.render(messages, tools, policy, tokenizer, add_generation_prompt=True)
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])  # the template writes BOS itself

    # ---- reading ------------------------------------------------------------------------------------------------
    def stop_ids(self, tokenizer: Any) -> set[int]:
        ids = {single_token_id(tokenizer, t) for t in self.stops}
        eos = tokenizer.eos_token_id
        ids |= set(eos) if isinstance(eos, list) else {eos}
        return {i for i in ids if isinstance(i, int)}

    def decode(self, tokenizer: Any, ids: Sequence[int]) -> str:
        stops = self.stop_ids(tokenizer)
        ids = list(ids)
        cut = next((i for i, t in enumerate(ids) if t in stops), len(ids))
        return tokenizer.decode(ids[:cut], skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def parse(self, text: str, id_prefix: str = "call_", tools: Sequence[Mapping[str, Any]] | None = None) -> Message:
        visible = split_thinking(text)[1] if self.thinking else text
        parsed = PARSERS[self.parser](visible, id_prefix, tools)
        return Message(role="assistant", content=parsed.content, tool_calls=parsed.calls, raw=text)

    def check_tokenizer(self, tokenizer: Any) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ChatFormatError(
                f"format {self.name!r} renders with the model's chat template, but the tokenizer has none"
                " (set chat_template in tokenizer_config.json, or use format=agentloop)"
            )
        if not self.stop_ids(tokenizer):
            raise ChatFormatError(
                f"format {self.name!r}: the tokenizer has no end-of-turn token"
                f" ({', '.join(self.stops)} or an eos_token)"
            )

    def template_hash(self, tokenizer: Any) -> str:
        """Identity of what renders the prompt: this format and the tokenizer's chat template (16 hex digits)."""
        spec = {"format": self.name, "template": getattr(tokenizer, "chat_template", None)}
        return sha256_json(spec, compact=False, ensure_ascii=True)[:16]
