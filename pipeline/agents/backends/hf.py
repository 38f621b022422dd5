"""The `hf` agent backend: a local transformers checkpoint, on CPU or the device asked for.

It renders the conversation with the checkpoint's chat format (the codec it was trained with, or the model's own
chat template: `pipeline.formats`), samples until an end-of-turn token, and parses the text with the same
format. Sampling uses a private random stream seeded from the agent's
seed and the episode's seed, so the same episode seed always gives the same output, whatever ran before.
"""

from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path
from typing import Any, cast

import torch
from transformers import DynamicCache

from pipeline.agents.backends.denormals import flushed_denormals
from pipeline.agents.backends.draws import pick
from pipeline.agents.backends.lean import LeanCache, LeanLlama
from pipeline.agents.backends.loading import cache_argument, load_model
from pipeline.agents.backends.tokens import common_prefix
from pipeline.formats import CodecConfig, CodecFormat
from pipeline.rollout import EpisodeInfo, Message, Usage

log = logging.getLogger(__name__)


def episode_seed(agent_seed: int, episode: int) -> int:
    """A 63-bit seed mixing the agent's and the episode's seeds (stable across processes)."""
    digest = hashlib.sha256(f"hf-agent:{agent_seed}:{episode}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@torch.inference_mode()
def sample(
    model: torch.nn.Module | None,
    prompt_ids: list[int],
    *,
    max_new_tokens: int,
    stop_ids: set[int],
    temperature: float = 0.0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
    prefix: PrefixCache | None = None,
    logprobs: list[float] | None = None,
) -> list[int]:
    """Generated ids (the stop token included when reached); greedy when temperature is 0.

    With `logprobs`, the log-probability of each drawn token under the temperature-scaled distribution (top-p not
    applied, as TRL scores it) is appended to it: what GRPO's importance-sampling correction needs.

    With `prefix`, the key/value cache of the longest common prefix with the previous call is reused and only
    the rest of the prompt is run (the codec makes turn t's prompt extend turn t-1's conversation), and the
    cache is left holding this prompt and the completion for the next call.
    """
    if prefix is None:
        assert model is not None, "sample() needs a model or a prefix cache"  # a caller's bug, never an input
        prefix = PrefixCache(model)
    on_cpu = model is not None and next(model.parameters()).device.type == "cpu"  # None: another engine's prefix
    with flushed_denormals(on_cpu):
        start = prefix.reuse(prompt_ids)
        new = prompt_ids[start:]
        prefix.ids = list(prompt_ids)
        out: list[int] = []
        for step in range(max_new_tokens):
            logits = prefix.logits(new)
            token = pick(logits, temperature, top_p, generator)
            out.append(token)
            if logprobs is not None:
                scaled = logits.float() / temperature if temperature > 0 else logits.float()
                logprobs.append(float(torch.log_softmax(scaled, dim=-1)[token]))
            if token in stop_ids or step == max_new_tokens - 1:
                break
            new = [token]
            prefix.ids.append(token)
        return out


class PrefixCache:
    """A key/value cache and the token ids it holds, carried from one turn of an episode to the next.

    A plain CPU float32 Llama (the embedded default) runs through `LeanLlama` (same arithmetic; episodes 1.85x
    faster, bench/embedded/bench_lean_decoding.py); anything else through the model's own forward. `lean=False`
    forces it.
    """

    def __init__(self, model: torch.nn.Module, lean: bool = True) -> None:
        self.model = model
        self.lean = LeanLlama.wrap(model) if lean else None
        self.cache: LeanCache | DynamicCache = self._empty()
        self.ids: list[int] = []

    def _empty(self) -> LeanCache | DynamicCache:
        return LeanCache(self.lean) if self.lean is not None else DynamicCache(config=cast(Any, self.model).config)

    def reuse(self, prompt_ids: list[int]) -> int:
        """Crop the cache to its common prefix with `prompt_ids` (leaving at least one token to run)."""
        common = common_prefix(self.ids, prompt_ids)
        common = max(0, min(common, len(prompt_ids) - 1))
        if common == 0:
            self.cache = self._empty()
        elif common < len(self.ids):
            if isinstance(self.cache, LeanCache):
                self.cache.crop(common)
            else:
                try:
                    self.cache.crop(common - len(self.ids))  # a negative count removes that many tokens from the end
                except RuntimeError:  # a sliding-window layer (Gemma) has forgotten what it would roll back to
                    self.cache, common = self._empty(), 0
        self.ids = self.ids[:common]
        return common

    @property
    def cached(self) -> int:
        """Tokens whose keys and values the cache holds."""
        return self.cache.length if isinstance(self.cache, LeanCache) else self.cache.get_seq_length()

    def logits(self, new_ids: list[int]) -> torch.Tensor:
        """Next-token logits after the cached tokens and `new_ids` (whose keys and values join the cache)."""
        if isinstance(self.cache, LeanCache):  # a lean cache is made only for a lean model
            return cast(LeanLlama, self.lean).logits(new_ids, self.cache)
        device = next(self.model.parameters()).device
        inputs = torch.tensor([new_ids], device=device)
        cache = {cache_argument(self.model): self.cache}  # filled in place
        return self.model(input_ids=inputs, use_cache=True, logits_to_keep=1, **cache).logits[0, -1].float()


class HFAgent:
    """Agent protocol over a checkpoint directory: an agentloop checkpoint or any causal LM (`load_model`)."""

    def __init__(
        self,
        checkpoint_dir: str | Path,
        temperature: float = 0.0,
        max_new_tokens: int = 256,
        seed: int = 0,
        top_p: float = 1.0,
        codec_config: CodecConfig | None = None,
        name: str | None = None,
        threads: int | None = 1,
        lean: bool = True,
        device: str | None = None,
        dtype: str = "auto",
        chat_format: str | None = None,
        draft_tokens: int = 8,
    ) -> None:
        if threads is not None:  # one token at a time through a tiny model: more threads only add overhead
            torch.set_num_threads(threads)
        loaded = load_model(
            checkpoint_dir, device=device, dtype=dtype, chat_format=chat_format, codec_config=codec_config
        )
        self.model, self.tokenizer, self.meta, self.format = loaded.model, loaded.tokenizer, loaded.meta, loaded.format
        self.codec_config = getattr(self.format, "config", None)  # the codec's, for a checkpoint in its format
        self.dtype = None if dtype == "auto" else str(next(self.model.parameters()).dtype).removeprefix("torch.")
        self.temperature, self.top_p = temperature, top_p
        # LeanLlama is built for the embedded model's short prompts: on a 4.7k-token chat-template prompt its
        # prefill took 5.3 s against transformers' 0.56 s (same tokens), so other formats use transformers.
        self.max_new_tokens, self.seed = max_new_tokens, seed
        self.draft_tokens = draft_tokens  # with episodes in flight: drafts run per pass (hf_batch); same tokens
        self.lean = lean and isinstance(self.format, CodecFormat)
        self.context = loaded.context
        self.stop_ids = loaded.stop_ids
        self.name = name or f"hf:{Path(checkpoint_dir).resolve().name}"

    @property
    def settings(self) -> dict:
        """What decides this agent's replies, for the run's record."""
        return {
            "kind": "hf",
            "format": self.format.name,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_new_tokens": self.max_new_tokens,
            "seed": self.seed,
            **({"dtype": self.dtype} if self.dtype else {}),  # asked for: runs in two dtypes are two backends
        }

    def start(self, info: EpisodeInfo) -> HFAgentEpisode:
        return HFAgentEpisode(self, info)

    def decoder(self):
        """Continuous batching of many episodes' replies: by hand where the lean path runs the model (`hf_batch`),
        else through the model's own forward (`hf_padded`) where its cache allows; otherwise one at a time."""
        from pipeline.agents.backends.hf_batch import HFDecoder
        from pipeline.agents.backends.hf_padded import PaddedDecoder
        from pipeline.rollout import OneByOne

        if self.lean and LeanLlama.wrap(self.model) is not None:
            return HFDecoder(self)
        return PaddedDecoder(self) if PaddedDecoder.supports(self.model) else OneByOne(self)


class HFAgentEpisode:
    def __init__(self, agent: HFAgent, info: EpisodeInfo) -> None:
        self.agent, self.info = agent, info
        self.generator = torch.Generator().manual_seed(episode_seed(agent.seed, info.seed))
        self.prefix = PrefixCache(agent.model, lean=agent.lean)
        self.turn = 0

    def prompt(self, messages: list[Message]) -> tuple[list[int], int]:
        """The prompt's ids and the room left for the reply (≤ 0: the context is full)."""
        a = self.agent
        prompt = a.format.prompt_ids(messages, self.info.tools, self.info.policy, a.tokenizer)
        room = min(a.max_new_tokens, a.context - len(prompt))
        if room <= 0:
            log.warning("prompt of %d tokens fills the %d-token context; the agent stops", len(prompt), a.context)
        return prompt, room

    def act(self, messages: list[Message]) -> Message:
        t0 = time.perf_counter()
        prompt, room = self.prompt(messages)
        completion = self.complete(prompt, room) if room > 0 else []
        return self.reply(prompt, completion, time.perf_counter() - t0)

    def complete(self, prompt: list[int], room: int) -> list[int]:
        """The reply's token ids (at most `room`), drawn from this episode's stream."""
        a = self.agent
        return sample(
            a.model,
            prompt,
            max_new_tokens=room,
            stop_ids=a.stop_ids,
            temperature=a.temperature,
            top_p=a.top_p,
            generator=self.generator,
            prefix=self.prefix,
        )

    def reply(self, prompt: list[int], completion: list[int], compute_s: float) -> Message:
        """The assistant message a completion decodes to, with its usage."""
        a = self.agent
        text = a.format.decode(a.tokenizer, [t for t in completion if t not in a.stop_ids])
        message = a.format.parse(text, id_prefix=f"call_{self.turn}_", tools=self.info.tools)
        self.turn += 1
        message.usage = Usage(prompt_tokens=len(prompt), completion_tokens=len(completion), compute_s=compute_s)
        return message
