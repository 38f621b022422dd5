"""The `vllm` agent backend: a checkpoint in vLLM's offline engine, on a GPU machine (the `gpu` extra).

The prompt is built as token ids by the checkpoint's chat format (the codec, segment by segment, for an
agentloop checkpoint; the model's own chat template otherwise), exactly as for the `hf` backend, and the
completion is parsed by the same format, so a checkpoint reads the same under both engines.

Many episodes in flight (`pipeline.trials.batch`) share one engine through `VLLMDecoder`: each `step` sends
every waiting prompt in one `LLM.generate` call, each with its own sampling seed, so vLLM batches them. A prompt
that leaves no room in the engine's context (`max_model_len`) is answered with a `PromptTooLongError` for its
own trial and never reaches the engine, whose whole `generate` call would otherwise fail for it.

vLLM is imported only when an agent is made, and the engine is built on the first generation: an agent pickled
to a Ray worker travels without it and each worker builds its own (one GPU per worker). With several workers or
machines, serving the checkpoint once (`vllm serve PATH`) and measuring through the `openai` backend is the
alternative.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline.errors import InfrastructureError, PromptTooLongError
from pipeline.rollout import EpisodeInfo, Message, Usage

log = logging.getLogger(__name__)


class BackendUnavailableError(InfrastructureError, ImportError):
    """The backend's engine is not installed on this machine."""


class VLLMConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(default=0.0, ge=0, description="Sampling temperature (0 = greedy).")
    top_p: float = Field(default=1.0, gt=0, le=1, description="Nucleus sampling mass.")
    max_tokens: int = Field(default=256, ge=1, description="Most tokens per reply.")
    seed: int = Field(default=0, description="Agent seed, mixed with the episode seed and the turn.")
    gpu_memory_utilization: float = Field(default=0.5, gt=0, le=1, description="Share of GPU memory vLLM takes.")
    max_model_len: int | None = Field(default=None, ge=16, description="Context length; None = the model's.")
    tensor_parallel_size: int = Field(default=1, ge=1, description="GPUs the model is split over.")


def import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise BackendUnavailableError(
            "the vllm backend needs vLLM and a CUDA GPU: pip install 'agentloop[gpu]'"
            " (on CPU use hf:PATH, or serve the checkpoint and use openai:MODEL)"
        ) from exc
    return vllm


class VLLMAgent:
    """Agent protocol over `vllm.LLM` (built lazily); one request or a batch per `generate` call, serialized
    (the offline engine is not thread-safe)."""

    def __init__(self, checkpoint_dir: str | Path, config: VLLMConfig | None = None, name: str | None = None) -> None:
        import_vllm()  # fail here, with the install hint, on a machine without vLLM
        from pipeline.agents.backends.loading import resolve_format
        from pipeline.agents.checkpoint import check_finite_files

        self.path = Path(checkpoint_dir)
        self.config = config or VLLMConfig()
        self.format, self.tokenizer, self.meta, _ = resolve_format(self.path)
        check_finite_files(self.path)  # the engine loads the weights itself: their files are checked once, here
        self.stop_ids = sorted(self.format.stop_ids(self.tokenizer))
        self.context = self.config.max_model_len or _model_context(self.path)
        self._llm: Any = None
        self._lock = threading.Lock()
        self.name = name or f"vllm:{self.path.resolve().name}"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_llm"], state["_lock"] = None, None  # never pickled: a worker builds its own engine
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def llm(self) -> Any:
        if self._llm is None:
            c = self.config
            self._llm = import_vllm().LLM(
                model=str(self.path),
                tokenizer=str(self.path),
                seed=c.seed,
                gpu_memory_utilization=c.gpu_memory_utilization,
                max_model_len=c.max_model_len,
                tensor_parallel_size=c.tensor_parallel_size,
            )
        return self._llm

    def start(self, info: EpisodeInfo) -> VLLMEpisode:
        return VLLMEpisode(self, info)

    def decoder(self) -> VLLMDecoder:
        return VLLMDecoder(self)

    def room(self, prompt_ids: list[int]) -> int:
        """Tokens the reply may take: the configured maximum, or what the context leaves."""
        room = min(self.config.max_tokens, self.context - len(prompt_ids))
        if room <= 0:
            raise PromptTooLongError(
                f"prompt of {len(prompt_ids)} tokens leaves no room in the engine's {self.context}-token context"
                " (max_model_len); raise max_model_len= if the model allows it"
            )
        return room

    def generate_batch(self, requests: list[tuple[list[int], int, int]]) -> list[list[int]]:
        """Completion ids for (prompt ids, max tokens, seed) requests, in one engine call."""
        vllm, c = import_vllm(), self.config
        params = [
            vllm.SamplingParams(
                temperature=c.temperature,
                top_p=c.top_p,
                max_tokens=room,
                seed=seed,
                stop_token_ids=self.stop_ids,
                skip_special_tokens=False,
            )
            for _, room, seed in requests
        ]
        prompts = [{"prompt_token_ids": ids} for ids, _, _ in requests]
        with self._lock:
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
        return [list(o.outputs[0].token_ids) for o in outputs]

    def generate(self, prompt_ids: list[int], seed: int) -> list[int]:
        return self.generate_batch([(prompt_ids, self.room(prompt_ids), seed)])[0]


def _model_context(path: Path) -> int:
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(str(path), local_files_only=True)
    cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    return int(getattr(cfg, "max_position_embeddings", None) or 2048)


class VLLMEpisode:
    def __init__(self, agent: VLLMAgent, info: EpisodeInfo) -> None:
        from pipeline.agents.backends.hf import episode_seed

        self.agent, self.info = agent, info
        self.seed = episode_seed(agent.config.seed, info.seed) % (2**31)
        self.turn = 0

    def prompt(self, messages: list[Message]) -> tuple[list[int], int, int]:
        """(prompt ids, room, this turn's seed); PromptTooLongError when the prompt does not fit."""
        a = self.agent
        ids = a.format.prompt_ids(messages, self.info.tools, self.info.policy, a.tokenizer)
        return ids, a.room(ids), (self.seed + self.turn) % (2**31)

    def act(self, messages: list[Message]) -> Message:
        t0 = time.perf_counter()
        prompt, room, seed = self.prompt(messages)
        completion = self.agent.generate_batch([(prompt, room, seed)])[0]
        return self.reply(prompt, completion, time.perf_counter() - t0)

    def reply(self, prompt: list[int], completion: list[int], compute_s: float) -> Message:
        a = self.agent
        text = a.format.decode(a.tokenizer, [t for t in completion if t not in a.stop_ids])
        message = a.format.parse(text, id_prefix=f"call_{self.turn}_", tools=self.info.tools)
        self.turn += 1
        message.usage = Usage(prompt_tokens=len(prompt), completion_tokens=len(completion), compute_s=compute_s)
        return message


class VLLMDecoder:
    """The `TurnDecoder` of a `VLLMAgent`: all waiting prompts of the episodes in flight in one `generate` call."""

    def __init__(self, agent: VLLMAgent) -> None:
        self.agent = agent
        self.pending: list[tuple[Any, VLLMEpisode, list[int], int, int, float]] = []
        self.done: list[tuple[Any, Message | InfrastructureError]] = []

    def submit(self, key: Any, episode: VLLMEpisode, messages: list[Message]) -> None:
        started = time.perf_counter()
        try:
            prompt, room, seed = episode.prompt(messages)
        except PromptTooLongError as exc:
            log.warning("task %s: %s", episode.info.task.id if episode.info.task else "?", exc)
            self.done.append((key, exc))
            return
        self.pending.append((key, episode, prompt, room, seed, started))

    def step(self) -> list[tuple[Any, Message | InfrastructureError]]:
        pending, self.pending = self.pending, []
        done, self.done = self.done, []
        if not pending:
            return done
        try:
            completions = self.agent.generate_batch([(p, room, seed) for _, _, p, room, seed, _ in pending])
        except (RuntimeError, ConnectionError, TimeoutError) as exc:  # a dead engine: every request in it is lost
            lost = InfrastructureError(f"vLLM generation failed: {exc}")
            return done + [(key, lost) for key, *_ in pending]
        now = time.perf_counter()
        for (key, episode, prompt, _, _, started), completion in zip(pending, completions, strict=True):
            done.append((key, episode.reply(prompt, completion, now - started)))
        return done
