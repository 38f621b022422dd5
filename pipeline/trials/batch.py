"""Episodes in flight: a step scheduler that advances many episodes together and batches their agent steps.

Why an explicit scheduler and not asyncio: every participant but the agent (scripted users, tools, grading) is
plain synchronous Python that takes microseconds, and the agent's cost is a model forward pass that wants all
waiting episodes in one call. Each episode is a generator (`episode_steps`) that stops where it needs the agent
and hands its request to the agent's `TurnDecoder`; each `step` of the decoder returns the replies that are
ready — the hf backend generates one token for every pending episode in one forward pass and returns the
messages that ended (continuous batching: an episode whose reply is done goes on to its user and tools and is
back with its next prompt while the others still generate); the openai backend keeps that many requests in
flight. Finished episodes are graded and replaced from the queue, so `width` episodes stay in flight.

Results do not depend on the batch: an episode's sampling draws from its own random stream (seeded from the
agent's seed and the episode's seed, consumed only by that episode's tokens), so which other episodes share a
forward pass changes nothing but float noise in the logits.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.dataset import Task
from pipeline.grading import Judge, grade
from pipeline.rollout import Agent, AgentTurn, InfrastructureError, Limits, Trajectory, User, decoder_for, episode_steps
from pipeline.trials.trial import TrialResult, trial_seed
from pipeline.world import World

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Live:
    task: Task
    trial: int
    attempt: int
    steps: Any  # the episode's generator
    turn: AgentTurn


class SharedFlight:
    """One set of episodes in flight fed by several callers (a Ray worker's concurrent calls): each adds its
    jobs and advances the shared scheduler, a round at a time under a lock, until its own trials are done. So
    the next call's episodes join the batch while the last ones of the call before are still running, and the
    batch stays full until the worker runs out of work, not at the end of every call."""

    def __init__(self, world, agent, user, seed, limits, judge, retries, width: int) -> None:
        self.run = _Scheduler(world, agent, user, seed, limits, judge, retries)
        self.width = width
        self.lock = threading.Lock()
        self.done: dict[tuple[str, int], TrialResult] = {}

    def run_jobs(self, jobs: Sequence[tuple[Task, int]]) -> list[TrialResult]:
        """Every (task, trial) of `jobs`, in `jobs` order."""
        keys = [(task.id, trial) for task, trial in jobs]
        with self.lock:
            self.run.queue.extend((task, trial, 1) for task, trial in jobs)
        while True:
            with self.lock:
                if all(key in self.done for key in keys):
                    return [self.done.pop(key) for key in keys]
                for result in self.run.advance(self.width):
                    self.done[(result.task.id, result.trial)] = result


def run_batched(
    world: World,
    jobs: Sequence[tuple[Task, int]],
    agent: Agent,
    user: User,
    seed: int = 0,
    limits: Limits | None = None,
    judge: Judge | None = None,
    retries: int = 0,
    width: int = 16,
) -> Iterator[TrialResult]:
    """Every (task, trial) of `jobs`, `width` episodes at a time; results are yielded as trials finish.

    A trial lost to an infrastructure error is run again (up to `retries` times) and otherwise comes back with
    an infra_error verdict, exactly as `run_trial` does one at a time.
    """
    run = _Scheduler(world, agent, user, seed, limits, judge, retries)
    run.queue.extend((task, trial, 1) for task, trial in jobs)
    try:
        yield from run.drive(width)
    finally:
        close = getattr(run.decoder, "close", None)
        if close is not None:
            close()


class _Scheduler:
    def __init__(self, world, agent, user, seed, limits, judge, retries) -> None:
        self.world, self.agent, self.user, self.seed = world, agent, user, seed
        self.limits, self.judge, self.retries = limits, judge, retries
        self.queue: deque[tuple[Task, int, int]] = deque()
        self.live: dict[_Live, None] = {}  # in flight, in start order
        self.decoder = decoder_for(agent)

    def drive(self, width: int) -> Iterator[TrialResult]:
        while self.queue or self.live:
            yield from self.advance(width)

    def advance(self, width: int) -> list[TrialResult]:
        """One round: episodes started from the queue up to `width` in flight, one decoder step, and the
        episodes it moves on; the trials that finished in it."""
        finished: list[TrialResult] = []
        while self.queue and len(self.live) < width:
            finished += self.start(*self.queue.popleft())
        if not self.live:
            return finished
        for episode, reply in self.decoder.step():
            try:
                if isinstance(reply, InfrastructureError):
                    episode.turn = episode.steps.throw(reply)
                else:
                    episode.turn = episode.steps.send(reply)
                self.decoder.submit(episode, episode.turn.episode, episode.turn.messages)
            except StopIteration as done:
                del self.live[episode]
                finished += self.finish(episode.task, episode.trial, episode.attempt, done.value)
        return finished

    def start(self, task: Task, trial: int, attempt: int) -> Iterator[TrialResult]:
        seed = trial_seed(self.seed, task.id, trial)
        steps = episode_steps(self.world, task, self.agent, self.user, trial=trial, seed=seed, limits=self.limits)
        try:
            episode = _Live(task, trial, attempt, steps, next(steps))
        except StopIteration as done:  # over before the agent's first step (the user stopped, start failed)
            yield from self.finish(task, trial, attempt, done.value)
            return
        self.live[episode] = None
        self.decoder.submit(episode, episode.turn.episode, episode.turn.messages)

    def finish(self, task: Task, trial: int, attempt: int, traj: Trajectory) -> Iterator[TrialResult]:
        verdict = grade(self.world, task, traj, limits=self.limits, judge=self.judge)
        while verdict.infra_error and not traj.infra_error and attempt <= self.retries:  # grading lost: grade again
            log.warning(
                "task %s trial %d: attempt %d/%d lost its grading to infrastructure; the conversation is kept",
                task.id,
                trial,
                attempt,
                self.retries + 1,
            )
            attempt += 1
            verdict = grade(self.world, task, traj, limits=self.limits, judge=self.judge)
        if verdict.infra_error and attempt <= self.retries:
            log.warning(
                "task %s trial %d: attempt %d/%d lost to infrastructure", task.id, trial, attempt, self.retries + 1
            )
            self.queue.appendleft((task, trial, attempt + 1))
            return
        yield TrialResult(task, trial, traj, verdict, attempt)
