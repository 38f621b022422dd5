"""SFT examples from recorded model calls: what an agent program itself sent its model, trained as it was served.

An agent program (`program:MODULE:FACTORY`) builds its own prompts: its system prompt, its tool schemas, its message
layout. Its trajectory's `model_calls` hold each request exactly as the program sent it and the completion it was
answered (`pipeline.programs.proxy.ModelCall`). Each call is read as `agentloop serve` reads a request
(`pipeline.endpoint.request_conversation`: the system messages are the policy, the rest the conversation, the tools
as declared) and rendered by the checkpoint's chat format, the completion as the assistant turn trained on. So the
model is trained on the prompts it is served at measure time — train/eval parity for a program.

A program that sends its whole history each call makes each call's conversation a prefix of the next one's: such a
call is folded into the later one (same policy and tools, its conversation and completion a prefix of the later
request), so each assistant turn is trained once, in the context it was answered in.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.endpoint import message_from_openai, request_conversation
from pipeline.errors import InputError
from pipeline.formats import ChatFormat, CodecConfig, encode_conversation
from pipeline.rollout import Message, Trajectory
from pipeline.train.sft_template import assistant_spans, tokenize_spans

log = logging.getLogger(__name__)


class NoModelCallsError(InputError):
    """SFT on model calls was asked for a trajectory that recorded none (not a program's, or no base_url)."""


@dataclass(frozen=True)
class CallExample:
    """One model call as the model saw it: the policy (system messages), the conversation and the completion as its
    last message, and the tools the program declared."""

    policy: str | None
    messages: list[Message]
    tools: list[dict[str, Any]]


def _dump(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json", exclude={"usage", "latency_s"}) for m in messages]


def call_example(call: dict[str, Any]) -> CallExample | None:
    """A recorded call (a `ModelCall` as the trajectory holds it) as an example; None when it was not answered."""
    choices = call.get("choices") or []
    if call.get("status", 200) != 200 or not choices or not isinstance(choices[0].get("message"), dict):
        return None
    params = call.get("params") or {}
    policy, conversation, tools = request_conversation(
        call.get("messages") or [], call.get("tools"), params.get("tool_choice")
    )
    completion = message_from_openai({**choices[0]["message"], "role": "assistant"})
    return CallExample(policy, [*conversation, completion], tools)


def call_examples(trajectory: Trajectory) -> list[CallExample]:
    """The trajectory's answered model calls as examples, each call folded into a later one that carries it."""
    if not trajectory.model_calls:
        raise NoModelCallsError(
            f"trajectory {trajectory.task_id}/{trajectory.trial}: no recorded model calls to train on"
            " (a program's trajectory measured with base_url=…)"
        )
    examples = [e for e in (call_example(c) for c in trajectory.model_calls) if e is not None]
    kept = []
    for i, example in enumerate(examples):
        mine = _dump(example.messages)
        carried = any(
            later.policy == example.policy
            and later.tools == example.tools
            and _dump(later.messages[: len(mine)]) == mine
            and len(later.messages) > len(mine)
            for later in examples[i + 1 :]
        )
        if not carried:
            kept.append(example)
    return kept


def encode_model_calls(
    trajectories: Sequence[Trajectory], tokenizer: Any, fmt: ChatFormat | None, codec: CodecConfig | None
) -> dict[str, list]:
    """Columns `input_ids` / `assistant_masks` of every trajectory's recorded model calls, rendered by the
    checkpoint's chat format (`fmt`; None: the codec `codec`), the loss on the program's assistant turns."""
    ids, masks = [], []
    for traj in trajectories:
        for example in call_examples(traj):
            if fmt is None:
                enc = encode_conversation(example.messages, example.tools, example.policy, tokenizer, codec)
                pairs = [(enc.ids, enc.assistant_mask)]
            else:
                pairs = [
                    tokenize_spans(tokenizer, text, spans)
                    for text, spans in assistant_spans(fmt, example.messages, example.tools, example.policy, tokenizer)
                ]
            for example_ids, mask in pairs:
                if sum(mask):
                    ids.append(list(example_ids))
                    masks.append(list(mask))
    log.info("SFT on model calls: %d examples from %d trajectories", len(ids), len(trajectories))
    return {"input_ids": ids, "assistant_masks": masks}
