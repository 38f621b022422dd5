"""What a chat format is: render a conversation with tools into a prompt, and read the model's output back.

One object per format (`pipeline.formats.FORMATS`); evaluation (`hf`), `serve` and `vllm` go through it,
so a model is prompted and read the same way wherever it runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pipeline.errors import InputError
from pipeline.rollout import Message


class ChatFormatError(InputError, ValueError):
    """A format that cannot be used with this tokenizer or conversation (the message says which and why)."""


class ChatFormat(Protocol):
    @property
    def name(self) -> str:
        """The format's name (`agentloop` for the compact codec, else the template family's)."""
        ...

    def render(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]],
        policy: str | None,
        tokenizer: Any,
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        """The conversation as prompt text (ending with the assistant's header when `add_generation_prompt`)."""
        ...

    def prompt_ids(
        self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]], policy: str | None, tokenizer: Any
    ) -> list[int]:
        """Token ids of the prompt for the next assistant turn."""
        ...

    def stop_ids(self, tokenizer: Any) -> set[int]:
        """Tokens that end the assistant's turn."""
        ...

    def decode(self, tokenizer: Any, ids: Sequence[int]) -> str:
        """Text of generated ids, up to the first stop token."""
        ...

    def parse(self, text: str, id_prefix: str = "call_", tools: Sequence[Mapping[str, Any]] | None = None) -> Message:
        """The model's text as an assistant message: visible content, tool calls, and the text itself in `raw`."""
        ...

    def check_tokenizer(self, tokenizer: Any) -> None:
        """Raise ChatFormatError when `tokenizer` cannot render or stop this format."""
        ...

    def template_hash(self, tokenizer: Any) -> str:
        """Identity of what the model sees in this format with `tokenizer` (recorded in a checkpoint)."""
        ...


def single_token_id(tokenizer: Any, token: str) -> int | None:
    """The id of `token` when the tokenizer holds it as one token (added or in the vocabulary), else None."""
    to_id = getattr(tokenizer, "convert_tokens_to_ids", None)
    if to_id is None:  # a tokenizer-like object without the lookup: its whole vocabulary
        return tokenizer.get_vocab().get(token)
    # one lookup, not `get_vocab()`: that builds a dict of the whole vocabulary (49k entries for SmolLM2), and
    # stop tokens are looked up at every render (SFT renders every prefix of every conversation)
    found = to_id(token)
    if not isinstance(found, int) or (found == tokenizer.unk_token_id and token != tokenizer.unk_token):
        return None
    return found
