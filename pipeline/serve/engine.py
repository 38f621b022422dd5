"""What `agentloop serve` runs: a local model that turns a conversation and tools into one assistant message.

Every checkpoint goes through the `hf` backend itself, so a served model and a measured one build the same
prompt ids, sample the same way and parse with the same chat format: the codec for an agentloop checkpoint,
the model's own chat template and its family's tool-call parser for any other causal LM
(`pipeline.formats`).
"""

from __future__ import annotations

import copy
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from pipeline.agents import HFAgent, HFAgentEpisode
from pipeline.errors import InputError, PromptTooLongError
from pipeline.rollout import EpisodeInfo, Message
from pipeline.serve.guard import max_token_bytes

log = logging.getLogger(__name__)


class GenerationParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(default=0.0, ge=0, description="0 = greedy.")
    top_p: float = Field(default=1.0, gt=0, le=1)
    max_tokens: int = Field(default=256, ge=1, description="Most tokens in the reply.")
    seed: int = Field(default=0, description="Seed of this request's sampling stream.")


@dataclass
class Generation:
    message: Message
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    prompt_ids: list[int] | None = None
    """The prompt's token ids as the engine rendered them (None: an engine that does not say)."""
    completion_ids: list[int] | None = None
    """The token ids sampled, in order, the stop token included (None: an engine that does not say)."""
    model: str | None = None
    """What the reply names as its model (None: the served name); a live engine names the version that answered."""


class Engine(Protocol):
    name: str
    context: int

    def generate(
        self, messages: list[Message], tools: list[dict], policy: str | None, params: GenerationParams
    ) -> Generation: ...


def _finish(message: Message, completion_tokens: int, limit: int) -> str:
    if message.tool_calls:
        return "tool_calls"
    return "length" if completion_tokens >= limit else "stop"


class _SampledEpisode(HFAgentEpisode):
    """The hf backend's episode, keeping the ids of the prompt it rendered and of the completion it sampled."""

    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None

    def reply(self, prompt: list[int], completion: list[int], compute_s: float) -> Message:
        self.prompt_ids, self.completion_ids = list(prompt), list(completion)
        return super().reply(prompt, completion, compute_s)


class CheckpointEngine:
    """A checkpoint directory run by `HFAgent` (the very code path of the `hf` backend)."""

    def __init__(
        self,
        path: str | Path,
        name: str | None = None,
        device: str | None = None,
        dtype: str = "auto",
        chat_format: str | None = None,
    ) -> None:
        self.agent = HFAgent(path, device=device, dtype=dtype, chat_format=chat_format)
        self.name = name or Path(path).resolve().name
        self.context = self.agent.context
        self.max_token_bytes = max_token_bytes(self.agent.tokenizer)
        self.format = self.agent.format

    def generate(
        self, messages: list[Message], tools: list[dict], policy: str | None, params: GenerationParams
    ) -> Generation:
        agent = copy.copy(self.agent)  # shares the weights; per-request sampling settings
        agent.temperature, agent.top_p, agent.max_new_tokens = params.temperature, params.top_p, params.max_tokens
        info = EpisodeInfo(task=None, trial=0, seed=params.seed, policy=policy or "", tools=tools)  # type: ignore[arg-type]
        episode = _SampledEpisode(agent, info)
        episode.turn = sum(1 for m in messages if m.role == "assistant")  # call ids as the hf backend numbers them
        message = episode.act(messages)
        usage = message.usage
        assert usage is not None
        if usage.completion_tokens == 0 and usage.prompt_tokens >= self.context:
            raise PromptTooLongError(
                f"This model's maximum context length is {self.context} tokens; the prompt has {usage.prompt_tokens}."
            )
        limit = min(params.max_tokens, self.context - usage.prompt_tokens)
        message.usage = message.latency_s = None
        return Generation(
            message,
            usage.prompt_tokens,
            usage.completion_tokens,
            _finish(message, usage.completion_tokens, limit),
            prompt_ids=episode.prompt_ids,
            completion_ids=episode.completion_ids,
        )


def load_engine(
    path: str | Path,
    name: str | None = None,
    device: str | None = None,
    dtype: str = "auto",
    chat_format: str | None = None,
) -> Engine:
    """An engine over a checkpoint directory (an agentloop checkpoint or any transformers causal LM)."""
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"{path}: no such model directory")
    return CheckpointEngine(path, name, device=device, dtype=dtype, chat_format=chat_format)


class Limiter:
    """At most `n` generations at once (torch on CPU gains nothing from more)."""

    def __init__(self, n: int) -> None:
        self.semaphore = threading.BoundedSemaphore(max(1, n))

    def __enter__(self) -> Limiter:
        self.semaphore.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.semaphore.release()
