"""The `llamacpp` agent backend: a checkpoint directory run by llama.cpp (`llama-cpp-python`) on the CPU.

The checkpoint is exported to GGUF once (`gguf_export`, cached by its weights' digest) in the weight type asked
for: f32 (the same arithmetic as transformers' float32 up to summation order), f16, or q8_0. Everything else is the
`hf` backend's: the chat format renders the prompt ids and parses the reply, and the same sampling code draws each
token from the logits, so the two engines differ only in the forward pass.

One llama.cpp context serves every episode of the agent: its key/value cache holds the last prompt, and each
reply reuses its longest common prefix with it (the opening of every episode, and the whole previous turn within
one).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np
import torch

from pipeline.agents.backends.gguf_export import WEIGHT_TYPES, export_gguf
from pipeline.agents.backends.hf import HFAgentEpisode, episode_seed
from pipeline.agents.backends.loading import resolve_format
from pipeline.agents.backends.tokens import common_prefix
from pipeline.errors import InputError
from pipeline.formats import CodecConfig
from pipeline.rollout import EpisodeInfo

log = logging.getLogger(__name__)


class LlamaCppPrefix:
    """`PrefixCache`'s interface over one llama.cpp context: the ids its cache holds, cropped to a new prompt's
    common prefix, then extended."""

    def __init__(self, llm) -> None:
        self.llm = llm
        self.ids: list[int] = []
        self.vocab = llm.n_vocab()

    def reuse(self, prompt_ids: list[int]) -> int:
        common = max(0, min(common_prefix(self.ids, prompt_ids), len(prompt_ids) - 1))
        self.llm.n_tokens = common  # the next eval removes every cached position from here on
        self.ids = self.ids[:common]
        return common

    @property
    def cached(self) -> int:
        return int(self.llm.n_tokens)

    def logits(self, new_ids: list[int]) -> torch.Tensor:
        self.llm.eval(new_ids)
        row = np.ctypeslib.as_array(self.llm._ctx.get_logits_ith(-1), shape=(self.vocab,))
        return torch.from_numpy(row.copy())


class LlamaCppAgent:
    """Agent protocol over a Llama-architecture checkpoint directory, its forward pass run by llama.cpp."""

    def __init__(
        self,
        checkpoint_dir: str | Path,
        temperature: float = 0.0,
        max_new_tokens: int = 256,
        seed: int = 0,
        top_p: float = 1.0,
        weights: str = "f32",
        threads: int = 1,
        context: int = 8192,
        chat_format: str | None = None,
        codec_config: CodecConfig | None = None,
        name: str | None = None,
    ) -> None:
        try:
            import llama_cpp
        except ImportError:
            raise InputError(
                "the llamacpp agent needs llama-cpp-python: pip install -e '.[llamacpp]' (or scripts/setup.sh)"
            ) from None
        if weights not in WEIGHT_TYPES:
            raise InputError(f"weights {weights!r}: expected one of {', '.join(WEIGHT_TYPES)}")
        self.format, self.tokenizer, self.meta, _ = resolve_format(checkpoint_dir, chat_format, codec_config)
        self.codec_config = getattr(self.format, "config", None)
        self.gguf = export_gguf(checkpoint_dir, weights)
        self.llm = llama_cpp.Llama(
            model_path=str(self.gguf),
            n_ctx=context,
            n_batch=512,
            n_threads=threads,
            n_threads_batch=threads,
            seed=seed,
            verbose=False,
        )
        self.context = min(context, self.llm.n_ctx())
        self.prefix = LlamaCppPrefix(self.llm)
        self.lock = threading.Lock()  # one context: replies are computed one at a time
        self.temperature, self.top_p, self.max_new_tokens, self.seed = temperature, top_p, max_new_tokens, seed
        self.weights, self.threads = weights, threads
        self.model = None  # no torch weights: HFAgentEpisode's prefix below is the context's
        self.lean = False
        eos = {i for i in (self.llm.token_eos(),) if i >= 0}
        self.stop_ids = self.format.stop_ids(self.tokenizer) | eos
        self.name = name or f"llamacpp:{Path(checkpoint_dir).resolve().name}"

    @property
    def settings(self) -> dict:
        """What decides this agent's replies, for the run's record (the engine and weight type included: runs of
        two engines are not one backend's)."""
        return {
            "kind": "llamacpp",
            "weights": self.weights,
            "format": self.format.name,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_new_tokens": self.max_new_tokens,
            "seed": self.seed,
        }

    def start(self, info: EpisodeInfo) -> LlamaCppEpisode:
        return LlamaCppEpisode(self, info)

    def close(self) -> None:
        self.llm.close()


class LlamaCppEpisode(HFAgentEpisode):
    def __init__(self, agent: LlamaCppAgent, info: EpisodeInfo) -> None:  # noqa: D107
        self.agent, self.info = agent, info  # type: ignore[assignment]
        self.generator = torch.Generator().manual_seed(episode_seed(agent.seed, info.seed))
        self.prefix = agent.prefix  # type: ignore[assignment]  # PrefixCache's interface, the agent's one context
        self.turn = 0

    def complete(self, prompt: list[int], room: int) -> list[int]:
        a: LlamaCppAgent = self.agent  # type: ignore[assignment]
        with a.lock:  # one context, its cache shared by every episode: one reply at a time
            return super().complete(prompt, room)
