"""Episodes as GRPO samples: our own runner, the scripted user and the grader behind TRL's `rollout_func`.

One GRPO sample is a whole episode. Its prompt is the system prompt and the customer's first message (up to the
assistant header); its completion is everything after, rendered by the codec with the tokens the policy actually
sampled in place of each assistant message; `env_mask` is 1 on those sampled tokens and 0 on user and tool
tokens (and on an end-of-turn token the codec added where the policy did not stop by itself). The reward is the
verdict: 1.0 if the grader passes the trial, else 0.0.

Groups (the `num_generations` episodes of one task) are filled with care:

- an episode lost to an infrastructure error (`InfrastructureError`, a crashed generator) is retried; a group
  that still cannot be completed is refilled with another task from the pool, never scored 0;
- dynamic sampling: a group whose rewards have no variance carries no GRPO signal, so it is replaced by a group
  of another task from the pool (up to `max_resamples` tries); a group that cannot be replaced is kept with its
  `env_mask` zeroed, so it stays out of the loss and out of its normaliser (TRL's default `dapo` loss divides by
  the number of mask-1 tokens in the generation batch).
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from pipeline.agents.codec import (
    ENDOFTEXT,
    IM_END,
    CodecConfig,
    decode_assistant,
    encode_conversation,
    parse_assistant,
)
from pipeline.agents.hf import episode_seed, sample
from pipeline.dataset.task import Task
from pipeline.grading.grader import grade
from pipeline.rollout.executor import trial_seed
from pipeline.rollout.protocols import EpisodeInfo, InfrastructureError, User
from pipeline.rollout.runner import Limits, run_episode
from pipeline.rollout.trajectory import Message, Trajectory, Usage
from pipeline.world.retail.state import RetailWorld
from pipeline.world.retail.tools import TOOLS

log = logging.getLogger(__name__)


class Generate(Protocol):
    """Token ids for one assistant turn (the stop token included when reached)."""

    def __call__(self, prompt_ids: list[int], max_new_tokens: int, generator: torch.Generator) -> list[int]: ...


def local_generate(model: torch.nn.Module, stop_ids: set[int], temperature: float, top_p: float = 1.0) -> Generate:
    """Sampling with the in-memory model (CPU, or the training GPU without vLLM); same sampler as the hf agent."""

    def generate(prompt_ids: list[int], max_new_tokens: int, generator: torch.Generator) -> list[int]:
        return sample(
            model,
            prompt_ids,
            max_new_tokens=max_new_tokens,
            stop_ids=stop_ids,
            temperature=temperature,
            top_p=top_p,
            generator=generator,
        )

    return generate


def vllm_generate(vllm_generation: Any) -> Generate:
    """Sampling through TRL's vLLM engine (colocate or server mode); sampling settings come from GRPOConfig."""

    def generate(prompt_ids: list[int], max_new_tokens: int, generator: torch.Generator) -> list[int]:
        _, completion_ids, *_ = vllm_generation.generate(prompts=[prompt_ids], images=None, num_generations=1)
        return list(completion_ids[0])[:max_new_tokens]

    return generate


class PolicyAgent:
    """The agent being trained: renders with the codec, samples with `generate`, parses with the codec.

    Unlike the `hf` backend it keeps, per episode, the exact ids it sampled for each assistant message.
    """

    def __init__(
        self,
        tokenizer: Any,
        codec: CodecConfig,
        generate: Generate,
        *,
        context: int,
        max_new_tokens: int = 256,
        seed: int = 0,
        name: str = "policy",
    ) -> None:
        self.tokenizer, self.codec, self.generate = tokenizer, codec, generate
        self.context, self.max_new_tokens, self.seed, self.name = context, max_new_tokens, seed, name
        self.stop_ids = {tokenizer.convert_tokens_to_ids(t) for t in (IM_END, ENDOFTEXT)}
        self.end_id = tokenizer.convert_tokens_to_ids(IM_END)

    def start(self, info: EpisodeInfo) -> PolicyEpisode:
        return PolicyEpisode(self, info)


class PolicyEpisode:
    def __init__(self, agent: PolicyAgent, info: EpisodeInfo) -> None:
        self.agent, self.info = agent, info
        self.generator = torch.Generator().manual_seed(episode_seed(agent.seed, info.seed))
        self.sampled: list[list[int]] = []  # per assistant message, in order
        self.turn = 0

    def act(self, messages: list[Message]) -> Message:
        a = self.agent
        t0 = time.perf_counter()
        prompt = encode_conversation(
            messages, self.info.tools, self.info.policy, a.tokenizer, a.codec, add_generation_prompt=True
        ).ids
        room = min(a.max_new_tokens, a.context - len(prompt))
        try:
            ids = a.generate(prompt, room, self.generator) if room > 0 else []
        except (RuntimeError, ConnectionError, TimeoutError) as exc:  # a crashed or unreachable generator
            raise InfrastructureError(f"generation failed: {exc}") from exc
        self.sampled.append(list(ids))
        text = decode_assistant(a.tokenizer, [t for t in ids if t not in a.stop_ids])
        message = parse_assistant(text, id_prefix=f"call_{self.turn}_")
        self.turn += 1
        message.usage = Usage(prompt_tokens=len(prompt), completion_tokens=len(ids), compute_s=time.perf_counter() - t0)
        return message


@dataclass
class Sample:
    """One finished episode as a GRPO sample."""

    task_id: str
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    reward: float
    trajectory: Trajectory


def episode_sample(
    traj: Trajectory, sampled: Sequence[Sequence[int]], policy: str, agent: PolicyAgent, reward: float
) -> Sample:
    """Split the codec rendering of an episode into prompt / completion, with the sampled ids and the env mask."""
    assistant = [i for i, m in enumerate(traj.messages) if m.role == "assistant"]
    completions = {}
    for index, ids in zip(assistant, sampled, strict=True):
        completions[index] = [t for t in ids if t not in agent.stop_ids]
    enc = encode_conversation(
        traj.messages, TOOLS.schemas(), policy, agent.tokenizer, agent.codec, completions=completions
    )
    mask = list(enc.assistant_mask)
    # an end-of-turn token the codec added where the policy hit its token limit was not sampled: no loss on it
    spans = enc.assistant_spans()
    for (_, end), ids in zip(spans, sampled, strict=True):
        if not ids or ids[-1] != agent.end_id:
            mask[end - 1] = 0
    first = next((i for i, m in enumerate(traj.messages) if m.role == "user"), 0)
    head = encode_conversation(
        traj.messages[: first + 1], TOOLS.schemas(), policy, agent.tokenizer, agent.codec, add_generation_prompt=True
    ).ids
    if enc.ids[: len(head)] != head:  # the codec guarantees prefix-stable rendering; never silently mis-split
        raise AssertionError("episode rendering does not extend its prompt")
    n = len(head)
    return Sample(traj.task_id, head, enc.ids[n:], mask[n:], reward, traj)


class RolloutStats(Counter):
    """groups, episodes, zero_variance_replaced, unreplaceable, infra_retries, infra_refilled."""


@dataclass
class EpisodeRollouts:
    """Runs groups of episodes for GRPO with dynamic sampling and infrastructure refills (see module doc)."""

    world: RetailWorld
    tasks: dict[str, Task]
    user: User
    make_agent: Callable[[], PolicyAgent]
    limits: Limits = field(default_factory=Limits)
    max_resamples: int = 4
    max_infra_retries: int = 2
    seed: int = 0
    stats: RolloutStats = field(default_factory=RolloutStats)
    _episode: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    # ---- one episode, one group -----------------------------------------------------------------------------
    def episode(self, agent: PolicyAgent, task: Task) -> Sample:
        """One graded episode; raises InfrastructureError when it stays broken after the retries."""
        for attempt in range(self.max_infra_retries + 1):
            self._episode += 1
            trial = self._episode
            episodes: list[PolicyEpisode] = []
            tracked = _Tracking(agent, episodes)
            traj = run_episode(
                self.world,
                task,
                tracked,
                self.user,
                trial=trial,
                seed=trial_seed(self.seed, task.id, trial),
                limits=self.limits,
            )
            self.stats["episodes"] += 1
            if not traj.infra_error:
                verdict = grade(self.world, task, traj, limits=self.limits)
                if not verdict.infra_error:
                    return episode_sample(traj, episodes[0].sampled, self.world.policy, agent, float(verdict.passed))
            self.stats["infra_retries"] += 1
            log.warning("task %s: infrastructure error (attempt %d): %s", task.id, attempt + 1, traj.error)
        raise InfrastructureError(f"task {task.id}: episode failed {self.max_infra_retries + 1} times")

    def group(self, agent: PolicyAgent, task: Task, size: int) -> list[Sample]:
        return [self.episode(agent, task) for _ in range(size)]

    # ---- a generation batch ------------------------------------------------------------------------------------
    def fill(self, task_ids: Sequence[str], size: int) -> list[tuple[list[Sample], bool]]:
        """One group per task id: (samples, trainable); replacements come from the rest of the pool."""
        agent = self.make_agent()
        used = set(task_ids)
        out = []
        for task_id in task_ids:
            task, samples, tries = self.tasks[task_id], None, 0
            while True:
                try:
                    samples = self.group(agent, task, size)
                except InfrastructureError:
                    self.stats["infra_refilled"] += 1
                    samples = None
                if samples is not None and len({s.reward for s in samples}) > 1:
                    out.append((samples, True))
                    break
                if samples is not None:
                    self.stats["zero_variance"] += 1
                if tries >= self.max_resamples:
                    if samples is None:
                        raise InfrastructureError(f"no group could be completed for task {task_id} or its refills")
                    self.stats["unreplaceable"] += 1
                    out.append((samples, False))
                    break
                tries += 1
                task = self._draw(used)
                used.add(task.id)
                if samples is not None:
                    self.stats["zero_variance_replaced"] += 1
            self.stats["groups"] += 1
        return out

    def _draw(self, used: set[str]) -> Task:
        fresh = [t for t in self.tasks if t not in used]
        return self.tasks[self.rng.choice(fresh or list(self.tasks))]


class _Tracking:
    """Wraps the policy so the runner's episode object (with its sampled ids) can be read back."""

    def __init__(self, agent: PolicyAgent, episodes: list[PolicyEpisode]) -> None:
        self.agent, self.episodes, self.name = agent, episodes, agent.name

    def start(self, info: EpisodeInfo) -> PolicyEpisode:
        ep = self.agent.start(info)
        self.episodes.append(ep)
        return ep


def grouped(prompts: Sequence[str], size: int) -> list[str]:
    """The task ids of consecutive groups of `size` repeated prompts (TRL repeats each prompt per generation)."""
    if len(prompts) % size:
        raise ValueError(f"{len(prompts)} prompts do not split into groups of {size}")
    heads = [prompts[i] for i in range(0, len(prompts), size)]
    for i, head in enumerate(heads):
        if any(p != head for p in prompts[i * size : (i + 1) * size]):
            raise ValueError("prompts of one group differ: expected each prompt repeated num_generations times")
    return heads


def to_trl(groups: list[tuple[list[Sample], bool]]) -> dict[str, list]:
    """The dict TRL's rollout_func returns; untrainable groups get an all-zero env_mask."""
    out: dict[str, list] = {
        "prompt_ids": [],
        "completion_ids": [],
        "logprobs": None,
        "env_mask": [],
        "verdict_reward": [],
        "rollout_task_id": [],
        "trainable": [],
    }
    for samples, trainable in groups:
        for s in samples:
            out["prompt_ids"].append(s.prompt_ids)
            out["completion_ids"].append(s.completion_ids)
            out["env_mask"].append(s.env_mask if trainable else [0] * len(s.env_mask))
            out["verdict_reward"].append(s.reward)
            out["rollout_task_id"].append(s.task_id)
            out["trainable"].append(trainable)
    return out
