"""The `vllm` agent backend: a checkpoint in vLLM's offline engine, on a GPU machine (the `gpu` extra).

The prompt is built as token ids by the checkpoint's chat format (the codec, segment by segment, for an
agentloop checkpoint; the model's own chat template otherwise), exactly as for the `hf` backend, and the
completion is parsed by the same format, so a checkpoint reads the same under both engines.
vLLM is imported only when an agent is made, so nothing else in the project needs it.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline.rollout.protocols import EpisodeInfo
from pipeline.rollout.trajectory import Message, Usage

log = logging.getLogger(__name__)


class BackendUnavailableError(ImportError):
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
    """Agent protocol over `vllm.LLM`; generation is serialized (the offline engine is not thread-safe)."""

    def __init__(self, checkpoint_dir: str | Path, config: VLLMConfig | None = None, name: str | None = None) -> None:
        vllm = import_vllm()
        from pipeline.agents.loading import resolve_format

        path = Path(checkpoint_dir)
        self.config = config or VLLMConfig()
        self.format, self.tokenizer, self.meta, _ = resolve_format(path)
        self.stop_ids = sorted(self.format.stop_ids(self.tokenizer))
        self.llm = vllm.LLM(
            model=str(path),
            tokenizer=str(path),
            seed=self.config.seed,
            gpu_memory_utilization=self.config.gpu_memory_utilization,
            max_model_len=self.config.max_model_len,
            tensor_parallel_size=self.config.tensor_parallel_size,
        )
        self._vllm = vllm
        self._lock = threading.Lock()
        self.name = name or f"vllm:{path.resolve().name}"

    def start(self, info: EpisodeInfo) -> VLLMEpisode:
        return VLLMEpisode(self, info)

    def generate(self, prompt_ids: list[int], seed: int) -> list[int]:
        c = self.config
        params = self._vllm.SamplingParams(
            temperature=c.temperature,
            top_p=c.top_p,
            max_tokens=c.max_tokens,
            seed=seed,
            stop_token_ids=self.stop_ids,
            skip_special_tokens=False,
        )
        with self._lock:
            outputs = self.llm.generate([{"prompt_token_ids": prompt_ids}], params, use_tqdm=False)
        return list(outputs[0].outputs[0].token_ids)


class VLLMEpisode:
    def __init__(self, agent: VLLMAgent, info: EpisodeInfo) -> None:
        from pipeline.agents.hf import episode_seed

        self.agent, self.info = agent, info
        self.seed = episode_seed(agent.config.seed, info.seed) % (2**31)
        self.turn = 0

    def act(self, messages: list[Message]) -> Message:
        a = self.agent
        t0 = time.perf_counter()
        prompt = a.format.prompt_ids(messages, self.info.tools, self.info.policy, a.tokenizer)
        completion = a.generate(prompt, (self.seed + self.turn) % (2**31))
        text = a.format.decode(a.tokenizer, [t for t in completion if t not in a.stop_ids])
        message = a.format.parse(text, id_prefix=f"call_{self.turn}_", tools=self.info.tools)
        self.turn += 1
        message.usage = Usage(
            prompt_tokens=len(prompt), completion_tokens=len(completion), compute_s=time.perf_counter() - t0
        )
        return message
