"""The policy GRPO trains, as an agent: it prompts in the checkpoint's chat format, samples with a `Generate`
(the in-memory model, or TRL's vLLM engine) and keeps each episode's token stream with the sampling logprobs.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import Any, Protocol

import torch

from pipeline.agents import episode_seed, sample
from pipeline.errors import InfrastructureError, TrainingError
from pipeline.formats import IM_END, ChatFormat, CodecConfig, CodecFormat, single_token_id
from pipeline.rollout import EpisodeInfo, Message, Usage
from pipeline.train.grpo_transcript import Transcript

log = logging.getLogger(__name__)


class Generate(Protocol):
    """Token ids for one assistant turn (the stop token included when reached) and each one's sampling logprob."""

    def __call__(
        self, prompt_ids: list[int], max_new_tokens: int, generator: torch.Generator
    ) -> tuple[list[int], list[float]]: ...


def local_generate(model: torch.nn.Module, stop_ids: set[int], temperature: float, top_p: float = 1.0) -> Generate:
    """Sampling with the in-memory model (CPU, or the training GPU without vLLM); same sampler as the hf agent.

    The logprobs are those of the temperature-scaled distribution the tokens were drawn from."""

    def generate(prompt_ids: list[int], max_new_tokens: int, generator: torch.Generator):
        logprobs: list[float] = []
        ids = sample(
            model,
            prompt_ids,
            max_new_tokens=max_new_tokens,
            stop_ids=stop_ids,
            temperature=temperature,
            top_p=top_p,
            generator=generator,
            logprobs=logprobs,
        )
        return ids, logprobs

    return generate


Request = tuple[list[int], int, torch.Generator]  # prompt ids, most new tokens, the episode's random stream


class GenerateBatch(Protocol):
    """`Generate` for many episodes' turns at once (one engine call), results in request order."""

    def __call__(self, requests: list[Request]) -> list[tuple[list[int], list[float]]]: ...


def local_generate_batch(
    model: torch.nn.Module, stop_ids: set[int], temperature: float, top_p: float = 1.0
) -> GenerateBatch | None:
    """`local_generate` for many turns at once: their decoding steps share forward passes (`PaddedBatch`), each
    token drawn from its request's own stream, so the tokens and logprobs are those of one at a time up to float
    rounding. None where the model's cache cannot be batched, or where the lean path runs it (the embedded
    default on CPU: exact, and faster one at a time than through transformers)."""
    from pipeline.agents import LeanLlama, PaddedBatch, PrefixCache, TokenRow

    if LeanLlama.wrap(model) is not None or not PaddedBatch.supports(model):
        return None

    def generate(requests: list[Request]) -> list[tuple[list[int], list[float]]]:
        batch = PaddedBatch(model, stop_ids, temperature, top_p)
        rows = [TokenRow(PrefixCache(model, lean=False), g, prompt, room, logprobs=[]) for prompt, room, g in requests]
        for row in rows:
            batch.start(row)
        while batch.busy:
            batch.step()
        return [(row.out, row.logprobs or []) for row in rows]

    return generate


def vllm_generate_batch(vllm_generation: Any) -> GenerateBatch:
    """Sampling through TRL's vLLM engine (colocate or server mode), every waiting turn in one call; sampling
    settings come from GRPOConfig (vLLM draws from its own random state, not the episodes' streams).

    TRL asks vLLM for `logprobs=0` (the sampled token's, after temperature: `processed_logprobs`); one vLLM
    reports as None becomes NaN, which TRL's correction leaves uncorrected."""

    def generate(requests: list[Request]) -> list[tuple[list[int], list[float]]]:
        prompts = [prompt for prompt, _, _ in requests]
        _, completion_ids, logprobs, *_ = vllm_generation.generate(prompts=prompts, images=None, num_generations=1)
        if logprobs is None:
            raise TrainingError("vLLM returned no logprobs (TRL's generation must ask for logprobs=0)")
        out = []
        for (_, room, _), ids, lps in zip(requests, completion_ids, logprobs, strict=True):
            ids = list(ids)[:room]
            out.append((ids, [math.nan if lp is None or lp[0] is None else float(lp[0]) for lp in lps[: len(ids)]]))
        return out

    return generate


def vllm_generate(vllm_generation: Any) -> Generate:
    """One turn through TRL's vLLM engine (`vllm_generate_batch` with one request)."""
    batch = vllm_generate_batch(vllm_generation)

    def generate(prompt_ids: list[int], max_new_tokens: int, generator: torch.Generator):
        return batch([(prompt_ids, max_new_tokens, generator)])[0]

    return generate


@torch.no_grad()
def score(model: torch.nn.Module, prompt_ids: list[int], ids: Sequence[int], temperature: float = 1.0) -> list[float]:
    """Logprobs of `ids` after `prompt_ids` under `model` (one forward pass): for tokens the model did not sample."""
    if not ids:
        return []
    device = next(model.parameters()).device
    seq = torch.tensor([list(prompt_ids) + list(ids)], device=device)
    logits = model(input_ids=seq).logits[0, len(prompt_ids) - 1 : -1].float() / temperature
    picked = torch.log_softmax(logits, dim=-1).gather(1, seq[0, len(prompt_ids) :, None])
    return [float(x) for x in picked[:, 0]]


class PolicyAgent:
    """The agent being trained: renders with the checkpoint's chat format, samples with `generate`, parses back.

    Unlike the `hf` backend it keeps each episode's token stream (`Transcript`): prompts, sampled ids, logprobs.
    """

    def __init__(
        self,
        tokenizer: Any,
        fmt: ChatFormat | CodecConfig,
        generate: Generate,
        *,
        context: int,
        max_new_tokens: int = 256,
        max_prompt_length: int | None = None,
        stop_ids: set[int] | None = None,
        generate_batch: GenerateBatch | None = None,
        seed: int = 0,
        name: str = "policy",
    ) -> None:
        self.format = CodecFormat(fmt) if isinstance(fmt, CodecConfig) else fmt
        self.tokenizer, self.generate, self.generate_batch = tokenizer, generate, generate_batch
        self.context, self.max_new_tokens, self.seed, self.name = context, max_new_tokens, seed, name
        self.max_prompt_length = max_prompt_length or max(1, context - max_new_tokens)
        self.stop_ids = set(stop_ids) if stop_ids else self.format.stop_ids(tokenizer)
        # what the format closes a turn with: its first end-of-turn token this tokenizer holds
        ends = [single_token_id(tokenizer, t) for t in getattr(self.format, "stops", None) or (IM_END,)]
        self.end_id = next((e for e in ends if e is not None), min(self.stop_ids))

    def start(self, info: EpisodeInfo) -> PolicyEpisode:
        return PolicyEpisode(self, info)

    def decoder(self) -> Any:
        """With `generate_batch`, the turns of all episodes in flight go to the engine together."""
        from pipeline.rollout import OneByOne

        return PolicyDecoder(self) if self.generate_batch is not None else OneByOne(self)


class PolicyEpisode:
    def __init__(self, agent: PolicyAgent, info: EpisodeInfo) -> None:
        self.agent, self.info = agent, info
        self.generator = torch.Generator().manual_seed(episode_seed(agent.seed, info.seed))
        self.transcript = Transcript(
            agent.format, agent.tokenizer, info.tools, info.policy, agent.stop_ids, agent.end_id
        )
        self.ended: str | None = None  # prompt_too_long / context_full
        self.turn = 0

    def prepare(self, messages: list[Message]) -> tuple[list[int], int] | Message:
        """The next prompt and the room for its reply, or the empty reply that ends the episode."""
        a = self.agent
        before = len(self.transcript.ids)
        prompt = self.transcript.prompt(messages)
        room = min(a.max_new_tokens, a.context - len(prompt))
        if self.turn == 0 and len(prompt) > a.max_prompt_length:
            self.ended = "prompt_too_long"
        elif room <= 0:
            self.ended = "context_full"
            self.transcript.drop_after(before)  # the sample stays within the context
        if self.ended:  # an empty reply ends the episode (agent_stop)
            log.info("episode %s: %s (%d prompt tokens)", self.info.task.id, self.ended, len(prompt))
            return Message(role="assistant", content="", usage=Usage(prompt_tokens=len(prompt)))
        return prompt, room

    def finish(self, messages: list[Message], prompt: list[int], ids: list[int], logprobs: list[float], t0: float):
        """Record the sampled turn and parse it into the assistant message."""
        a = self.agent
        self.transcript.sampled(ids, logprobs, len(messages))
        text = a.format.decode(a.tokenizer, [t for t in ids if t not in a.stop_ids])
        message = a.format.parse(text, id_prefix=f"call_{self.turn}_", tools=self.info.tools)
        self.turn += 1
        message.usage = Usage(prompt_tokens=len(prompt), completion_tokens=len(ids), compute_s=time.perf_counter() - t0)
        return message

    def act(self, messages: list[Message]) -> Message:
        t0 = time.perf_counter()
        ready = self.prepare(messages)
        if isinstance(ready, Message):
            return ready
        prompt, room = ready
        try:
            ids, logprobs = self.agent.generate(prompt, room, self.generator)
        except (RuntimeError, ConnectionError, TimeoutError) as exc:  # a crashed or unreachable generator
            raise InfrastructureError(f"generation failed: {exc}") from exc
        return self.finish(messages, prompt, ids, logprobs, t0)


class PolicyDecoder:
    """The `TurnDecoder` of a policy with `generate_batch`: one engine call per step for every waiting turn."""

    def __init__(self, agent: PolicyAgent) -> None:
        if agent.generate_batch is None:
            raise ValueError("PolicyDecoder needs a policy with generate_batch")
        self.agent = agent
        self.generate_batch = agent.generate_batch
        self.pending: list[tuple[Any, PolicyEpisode, list[Message], list[int], int, float]] = []
        self.done: list[tuple[Any, Message | InfrastructureError]] = []

    def submit(self, key: Any, episode: PolicyEpisode, messages: list[Message]) -> None:
        t0 = time.perf_counter()
        ready = episode.prepare(messages)
        if isinstance(ready, Message):
            self.done.append((key, ready))
        else:
            self.pending.append((key, episode, messages, *ready, t0))

    def step(self) -> list[tuple[Any, Message | InfrastructureError]]:
        pending, self.pending = self.pending, []
        done, self.done = self.done, []
        if not pending:
            return done
        requests = [(prompt, room, episode.generator) for _, episode, _, prompt, room, _ in pending]
        try:
            outs = self.generate_batch(requests)
        except (RuntimeError, ConnectionError, TimeoutError) as exc:  # every turn in the call is lost
            lost = InfrastructureError(f"generation failed: {exc}")
            return done + [(key, lost) for key, *_ in pending]
        for (key, episode, messages, prompt, _, t0), (ids, logprobs) in zip(pending, outs, strict=True):
            done.append((key, episode.finish(messages, prompt, ids, logprobs, t0)))
        return done
