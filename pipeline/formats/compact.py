"""The project's own format (`agentloop`): the codec the embedded model is trained with, as a chat format.

Every call goes straight to `pipeline.formats.codec`, so a checkpoint in this format is prompted, stopped and
read exactly as before formats existed (segment-wise token ids, so turn t's prompt extends turn t-1's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.formats import codec
from pipeline.formats.base import ChatFormatError
from pipeline.rollout import Message


@dataclass(frozen=True)
class CodecFormat:
    config: codec.CodecConfig = field(default_factory=codec.CodecConfig)
    name: str = "agentloop"
    memo: codec.SegmentIds = field(default_factory=codec.SegmentIds, compare=False, repr=False)

    def render(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]],
        policy: str | None,
        tokenizer: Any = None,
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        segs = codec.render_conversation(
            messages, tools, policy, self.config, add_generation_prompt=add_generation_prompt
        )
        return "".join(s.text for s in segs)

    def prompt_ids(
        self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]], policy: str | None, tokenizer: Any
    ) -> list[int]:
        return codec.encode_conversation(
            messages, tools, policy, tokenizer, self.config, add_generation_prompt=True, memo=self.memo
        ).ids

    def stop_ids(self, tokenizer: Any) -> set[int]:
        return {tokenizer.convert_tokens_to_ids(t) for t in (codec.IM_END, codec.ENDOFTEXT)}

    def decode(self, tokenizer: Any, ids: Sequence[int]) -> str:
        stops = self.stop_ids(tokenizer)
        return codec.decode_assistant(tokenizer, [t for t in ids if t not in stops])

    def parse(self, text: str, id_prefix: str = "call_", tools: Sequence[Mapping[str, Any]] | None = None) -> Message:
        return codec.parse_assistant(text, id_prefix=id_prefix)

    def check_tokenizer(self, tokenizer: Any) -> None:
        try:
            codec.check_tokenizer(tokenizer)
        except codec.CodecMismatchError as exc:
            raise ChatFormatError(f"format 'agentloop': {exc}") from exc

    def template_hash(self, tokenizer: Any = None) -> str:
        return codec.codec_hash(self.config)
