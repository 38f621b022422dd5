"""Episodes as GRPO samples: our own runner, the scripted user and the grader behind TRL's `rollout_func`.

One GRPO sample is a whole episode, kept token in, token out (`pipeline.train.grpo_transcript`): its prompt is the
system prompt and the customer's first message up to the assistant header, in the checkpoint's chat format; its
completion is everything after, with the ids the policy sampled in place. `env_mask` is 1 on those sampled tokens
and 0 on user and tool tokens (and on an end-of-turn token added where the policy did not stop by itself);
`logprobs` holds, per completion token, the sampling logprob of a sampled token (0.0 elsewhere), which TRL's
importance-sampling correction compares with the trainer's own. The reward is the verdict: 1.0 if the grader
passes the trial, else 0.0.

Groups (the `num_generations` episodes of one task) are filled with care:

- an episode lost to an infrastructure error (`InfrastructureError`, a crashed generator) is retried; a group
  that still cannot be completed is refilled with another task from the pool, never scored 0;
- a task whose first prompt is longer than `max_prompt_length` is set aside for the run (counted in
  `prompt_too_long`) and its group refilled; an episode whose context fills up ends there (`context_full`);
- dynamic sampling: a group whose rewards have no variance carries no GRPO signal, so it is replaced by a group
  of another task from the pool (up to `max_resamples` tries); a group that cannot be replaced is kept with its
  `env_mask` zeroed, so it stays out of the loss and out of its normaliser (TRL's default `dapo` loss divides by
  the number of mask-1 tokens in the generation batch).
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.dataset import Task
from pipeline.errors import PromptTooLongError
from pipeline.grading import grade
from pipeline.rollout import EpisodeInfo, InfrastructureError, Limits, Trajectory, User, run_episode
from pipeline.train.grpo_policy import (  # noqa: F401  (re-exported: the rollouts' public names)
    Generate,
    PolicyAgent,
    PolicyEpisode,
    local_generate,
    local_generate_batch,
    score,
    vllm_generate,
    vllm_generate_batch,
)
from pipeline.train.grpo_transcript import Transcript
from pipeline.trials import run_batched, trial_seed
from pipeline.world import World

log = logging.getLogger(__name__)


@dataclass
class Sample:
    """One finished episode as a GRPO sample (`completion_ids`, `env_mask` and `logprobs` align)."""

    task_id: str
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    logprobs: list[float]
    reward: float
    trajectory: Trajectory


def episode_sample(traj: Trajectory, transcript: Transcript, end_id: int, reward: float) -> Sample:
    """The episode's stream split into prompt and completion (never empty: TRL reads its last token)."""
    completion, mask, logprobs = transcript.completion, list(transcript.mask), list(transcript.logprobs)
    if not completion:
        completion, mask, logprobs = [end_id], [0], [0.0]
    return Sample(traj.task_id, transcript.ids[: transcript.prompt_len], completion, mask, logprobs, reward, traj)


class RolloutStats(Counter):
    """groups, episodes, zero_variance(_replaced), unreplaceable, infra_retries, infra_refilled, prompt_too_long,
    context_full."""


@dataclass
class EpisodeRollouts:
    """Runs groups of episodes for GRPO with dynamic sampling and infrastructure refills (see module doc)."""

    world: World
    tasks: dict[str, Task]
    user: User
    make_agent: Callable[[], PolicyAgent]
    limits: Limits = field(default_factory=Limits)
    max_resamples: int = 4
    max_infra_retries: int = 2
    seed: int = 0
    stats: RolloutStats = field(default_factory=RolloutStats)
    too_long: set[str] = field(default_factory=set)  # tasks whose first prompt does not fit
    _episode: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    # ---- one episode, one group -----------------------------------------------------------------------------
    def episode(self, agent: PolicyAgent, task: Task) -> Sample:
        """One graded episode; raises InfrastructureError when it stays broken after the retries, and
        PromptTooLongError when the task's first prompt does not fit."""
        for attempt in range(self.max_infra_retries + 1):
            self._episode += 1
            trial = self._episode
            episodes: dict[int, PolicyEpisode] = {}
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
            ep = episodes[trial]
            _check_prompt(ep, task, agent)
            if ep.ended:
                self.stats[ep.ended] += 1
            if not traj.infra_error:
                verdict = grade(self.world, task, traj, limits=self.limits)
                if not verdict.infra_error:
                    return episode_sample(traj, ep.transcript, agent.end_id, float(verdict.passed))
            self.stats["infra_retries"] += 1
            log.warning("task %s: infrastructure error (attempt %d): %s", task.id, attempt + 1, traj.error)
        raise InfrastructureError(f"task {task.id}: episode failed {self.max_infra_retries + 1} times")

    def group(self, agent: PolicyAgent, task: Task, size: int) -> list[Sample]:
        if agent.generate_batch is None:
            return [self.episode(agent, task) for _ in range(size)]
        return self._batched_group(agent, task, size)

    def _batched_group(self, agent: PolicyAgent, task: Task, size: int) -> list[Sample]:
        """The group's episodes in flight together, their turns sent to the engine in one call per step."""
        trials = [self._episode + i + 1 for i in range(size)]
        self._episode += size
        episodes: dict[int, PolicyEpisode] = {}
        tracked = _Tracking(agent, episodes)
        jobs = [(task, trial) for trial in trials]
        samples: dict[int, Sample] = {}
        kw: dict[str, Any] = {
            "seed": self.seed,
            "limits": self.limits,
            "retries": self.max_infra_retries,
            "width": size,
        }
        for r in run_batched(self.world, jobs, tracked, self.user, **kw):
            self.stats["episodes"] += r.attempts
            self.stats["infra_retries"] += r.attempts - 1
            ep = episodes[r.trial]
            _check_prompt(ep, task, agent)
            if r.verdict.infra_error:
                self.stats["infra_retries"] += 1
                raise InfrastructureError(f"task {task.id}: episode failed {self.max_infra_retries + 1} times")
            if ep.ended:
                self.stats[ep.ended] += 1
            samples[r.trial] = episode_sample(r.trajectory, ep.transcript, agent.end_id, float(r.verdict.passed))
        return [samples[t] for t in trials]

    # ---- a generation batch ------------------------------------------------------------------------------------
    def fill(self, task_ids: Sequence[str], size: int) -> list[tuple[list[Sample], bool]]:
        """One group per task id: (samples, trainable); replacements come from the rest of the pool."""
        agent = self.make_agent()
        used = set(task_ids)
        out = []
        for task_id in task_ids:
            task, tries = self.tasks[task_id], 0
            while True:
                samples = self._try_group(agent, task, size)
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
                task = self._draw(used, agent)
                used.add(task.id)
                if samples is not None:
                    self.stats["zero_variance_replaced"] += 1
            self.stats["groups"] += 1
        return out

    def _try_group(self, agent: PolicyAgent, task: Task, size: int) -> list[Sample] | None:
        if task.id in self.too_long:
            return None
        try:
            return self.group(agent, task, size)
        except PromptTooLongError as exc:
            self.too_long.add(task.id)
            self.stats["prompt_too_long"] += 1
            log.warning("%s; the task is set aside for this run", exc)
        except InfrastructureError:
            self.stats["infra_refilled"] += 1
        return None

    def _draw(self, used: set[str], agent: PolicyAgent) -> Task:
        pool = [t for t in self.tasks if t not in self.too_long]
        if not pool:
            raise PromptTooLongError(
                f"GRPO: every task's first prompt is over max_prompt_length={agent.max_prompt_length} tokens"
            )
        fresh = [t for t in pool if t not in used]
        return self.tasks[self.rng.choice(fresh or pool)]


def _check_prompt(episode: PolicyEpisode, task: Task, agent: PolicyAgent) -> None:
    if episode.ended == "prompt_too_long":
        raise PromptTooLongError(
            f"task {task.id}: the first prompt is {episode.transcript.prompt_len} tokens, over"
            f" max_prompt_length={agent.max_prompt_length}"
        )


class _Tracking:
    """Wraps the policy so the runner's episode objects (with their token streams) can be read back, by trial."""

    def __init__(self, agent: PolicyAgent, episodes: dict[int, PolicyEpisode]) -> None:
        self.agent, self.episodes, self.name = agent, episodes, agent.name

    def start(self, info: EpisodeInfo) -> PolicyEpisode:
        ep = self.agent.start(info)
        self.episodes[info.trial] = ep  # a retried trial's latest attempt
        return ep

    def decoder(self) -> Any:
        return self.agent.decoder()


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
        "logprobs": [],
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
            out["logprobs"].append(s.logprobs)
            out["verdict_reward"].append(s.reward)
            out["rollout_task_id"].append(s.task_id)
            out["trainable"].append(trainable)
    return out
