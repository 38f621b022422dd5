"""SFT examples for a checkpoint that renders with its own chat template (an outside model: Qwen2.5, Llama 3.1…).

The text is the format's own rendering (`ChatFormat.render`, the same call evaluation makes), and the loss mask
is found from that rendering: for each assistant message, the conversation up to it rendered with the generation
prompt is the context, and the conversation including it is the context plus the assistant's turn. The turn's
characters, up to and including its end-of-turn token, are the assistant span; tokens starting inside a span are
trained on (the tokenizer's offsets map characters to tokens). So the mask follows the checkpoint's template,
whatever it is, with no `{% generation %}` markers needed, and the tokens trained on are the ones the model is
prompted with. A template that re-renders earlier turns differently (Qwen3 drops the thinking of turns before the
last customer message) makes a turn's context no prefix of the whole; that turn is then trained as an example of
its own, ending with it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.formats import ChatFormat, ChatFormatError
from pipeline.rollout import Message, Trajectory
from pipeline.train.sft_data import world_prompt

log = logging.getLogger(__name__)


def _turn_end(fmt: ChatFormat, tokenizer: Any, turn: str) -> int:
    """Length of the assistant's turn up to and including its last end-of-turn token (what generation stops at)."""
    stops = [s for s in getattr(fmt, "stops", ()) if s]
    eos = getattr(tokenizer, "eos_token", None)
    if isinstance(eos, str) and eos:
        stops.append(eos)
    ends = [turn.rfind(s) + len(s) for s in stops if s in turn]
    return max(ends) if ends else len(turn)


def assistant_spans(
    fmt: ChatFormat,
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]],
    policy: str | None,
    tokenizer: Any,
) -> list[tuple[str, list[tuple[int, int]]]]:
    """(text, character spans of the assistant turns) for each example the conversation makes (one if the template
    renders it as one growing prefix, more where it does not)."""
    examples: list[tuple[str, list[tuple[int, int]]]] = []
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    if last < 0:
        return examples
    full = fmt.render(messages[: last + 1], tools, policy, tokenizer, add_generation_prompt=False)
    spans: list[tuple[int, int]] = []
    for i, m in enumerate(messages[: last + 1]):
        if m.role != "assistant":
            continue
        context = fmt.render(messages[:i], tools, policy, tokenizer, add_generation_prompt=True)
        upto = fmt.render(messages[: i + 1], tools, policy, tokenizer, add_generation_prompt=False)
        if not upto.startswith(context):
            raise ChatFormatError(
                f"format {fmt.name!r}: the template renders the generation prompt of turn {i} differently from the"
                " turn itself; its assistant tokens cannot be located"
            )
        end = len(context) + _turn_end(fmt, tokenizer, upto[len(context) :])
        if end > len(context):
            if full.startswith(upto):
                spans.append((len(context), end))
            else:
                examples.append((upto, [(len(context), end)]))
    if spans:
        examples.insert(0, (full, spans))
    return examples


def tokenize_spans(tokenizer: Any, text: str, spans: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Token ids of `text` (no special tokens added: the template writes its own BOS) and the mask of those that
    start inside a span."""
    if not getattr(tokenizer, "is_fast", False):
        raise ChatFormatError(
            f"{type(tokenizer).__name__}: SFT of a chat-template checkpoint needs a fast tokenizer (tokenizer.json)"
            " to map its assistant characters to tokens"
        )
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    mask = []
    for start, stop in enc["offset_mapping"]:
        mask.append(int(stop > start and any(a <= start < b for a, b in spans)))
    return list(enc["input_ids"]), mask


def encode_with_template(
    trajectories: Sequence[Trajectory],
    tokenizer: Any,
    fmt: ChatFormat,
) -> dict[str, list]:
    """Columns `input_ids` / `assistant_masks` (as `encode_for_sft` gives for the codec), rendered by `fmt` with
    the policy and tools of each trajectory's own world (`world_prompt`)."""
    ids, masks = [], []
    prompts: dict[tuple[str, str], tuple[str, list[dict]]] = {}
    for traj in trajectories:
        policy, tools = prompts.setdefault((traj.world, traj.domain), world_prompt(traj))
        for text, spans in assistant_spans(fmt, traj.messages, tools, policy, tokenizer):
            example_ids, mask = tokenize_spans(tokenizer, text, spans)
            if sum(mask):
                ids.append(example_ids)
                masks.append(mask)
    return {"input_ids": ids, "assistant_masks": masks}
