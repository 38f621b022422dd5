"""What `agentloop serve` runs: a local model that turns a conversation and tools into one assistant message.

An agentloop checkpoint (with `agentloop.json`) goes through the `hf` backend itself, so a served model and
the embedded one build the same prompt ids, sample the same way and parse with the same codec. Any other
transformers checkpoint is prompted with its own chat template (or the codec's template when it has none)
and its output is parsed by the codec (Hermes-style `<tool_call>` blocks, which Qwen-style models emit).
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch
from pydantic import BaseModel, ConfigDict, Field

from pipeline.agents.codec import IM_END, parse_assistant, render_prompt
from pipeline.agents.hf import HFAgent, HFAgentEpisode, episode_seed, sample
from pipeline.agents.openai_format import to_openai_messages
from pipeline.rollout.protocols import EpisodeInfo
from pipeline.rollout.trajectory import Message
from pipeline.serve.guard import max_token_bytes
from pipeline.train.model import META_FILE

log = logging.getLogger(__name__)


class PromptTooLongError(ValueError):
    """The conversation does not fit the model's context."""


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


class CheckpointEngine:
    """An agentloop checkpoint, run by `HFAgent` (the very code path of the `hf` backend)."""

    def __init__(self, path: str | Path, name: str | None = None) -> None:
        self.agent = HFAgent(path)
        self.name = name or Path(path).resolve().name
        self.context = self.agent.context
        self.max_token_bytes = max_token_bytes(self.agent.tokenizer)

    def generate(
        self, messages: list[Message], tools: list[dict], policy: str | None, params: GenerationParams
    ) -> Generation:
        agent = copy.copy(self.agent)  # shares the weights; per-request sampling settings
        agent.temperature, agent.top_p, agent.max_new_tokens = params.temperature, params.top_p, params.max_tokens
        info = EpisodeInfo(task=None, trial=0, seed=params.seed, policy=policy or "", tools=tools)  # type: ignore[arg-type]
        episode = HFAgentEpisode(agent, info)
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
            message, usage.prompt_tokens, usage.completion_tokens, _finish(message, usage.completion_tokens, limit)
        )


class TransformersEngine:
    """Any causal LM checkpoint: its chat template (or the codec's) in, the codec's parser out."""

    def __init__(self, path: str | Path, name: str | None = None) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True).eval()
        self.name = name or Path(path).resolve().name
        self.context = int(getattr(self.model.config, "max_position_embeddings", 2048))
        self.max_token_bytes = max_token_bytes(self.tokenizer)
        stops = {self.tokenizer.eos_token_id, self.tokenizer.convert_tokens_to_ids(IM_END)}
        self.stop_ids = {t for t in stops if isinstance(t, int) and t != self.tokenizer.unk_token_id}

    def prompt(self, messages: list[Message], tools: list[dict], policy: str | None) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                to_openai_messages(messages, policy), tools=tools or None, add_generation_prompt=True, tokenize=False
            )
        return render_prompt(messages, tools, policy)

    def generate(
        self, messages: list[Message], tools: list[dict], policy: str | None, params: GenerationParams
    ) -> Generation:
        t0 = time.perf_counter()
        ids = self.tokenizer(self.prompt(messages, tools, policy), add_special_tokens=False)["input_ids"]
        room = min(params.max_tokens, self.context - len(ids))
        if room <= 0:
            raise PromptTooLongError(
                f"This model's maximum context length is {self.context} tokens; the prompt has {len(ids)}."
            )
        generator = torch.Generator().manual_seed(episode_seed(0, params.seed))
        out = sample(
            self.model,
            ids,
            max_new_tokens=room,
            stop_ids=self.stop_ids,
            temperature=params.temperature,
            top_p=params.top_p,
            generator=generator,
        )
        text = self.tokenizer.decode([t for t in out if t not in self.stop_ids], skip_special_tokens=False)
        turn = sum(1 for m in messages if m.role == "assistant")
        message = parse_assistant(text, id_prefix=f"call_{turn}_")
        log.debug("generated %d tokens in %.3fs", len(out), time.perf_counter() - t0)
        return Generation(message, len(ids), len(out), _finish(message, len(out), room))


def load_engine(path: str | Path, name: str | None = None) -> Engine:
    """CheckpointEngine for an agentloop checkpoint, TransformersEngine for any other model directory."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such model directory")
    if (path / META_FILE).exists():
        return CheckpointEngine(path, name)
    return TransformersEngine(path, name)


class Limiter:
    """At most `n` generations at once (torch on CPU gains nothing from more)."""

    def __init__(self, n: int) -> None:
        self.semaphore = threading.BoundedSemaphore(max(1, n))

    def __enter__(self) -> Limiter:
        self.semaphore.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.semaphore.release()
