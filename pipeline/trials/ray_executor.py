"""The Ray executor: tasks × trials fanned out to long-lived worker actors, results handed back in order.

Each actor receives the world, the agent (its model), the user simulator and the judge once, when it starts,
and then runs one trial per call: the episode, retries of infrastructure errors, and the verdict. At most
`workers × in_flight_per_worker` calls are outstanding (finished results wait in a reorder buffer only until
the trials before them are done), so no task count floods the cluster. A worker
that dies (OOM, a killed process, a lost node) is replaced and its trials run again, each alone on an idle
worker (a death takes down every trial in flight on the worker, not only its cause); a trial that keeps
killing its worker is reported with an infra_error verdict and left out of the metrics, never scored as a
failure. Results come back in (task, trial) order whatever order they finish in, so the files and metrics a
run writes are the same as with the serial executor.

Every wait has a deadline: workers that the cluster cannot place (asking for more CPUs or GPUs than it has)
fail within `start_timeout_s` with an error naming the resources, and a run where no trial finishes for
`stall_timeout_s` stops with an error naming the trials in flight. More workers than CPUs share them (each asks
for a fraction of a CPU) instead of waiting forever for cores that do not exist. Ctrl-C stops the actors and,
when this executor started the local Ray instance, shuts it down, so no Ray process outlives the run.

On an existing cluster (`address`, or Ray's $RAY_ADDRESS; see `pipeline.trials.ray_cluster`) every node needs
agentloop importable (the same version as the driver); the run only connects, and never stops that cluster.
Each result names the node that ran it, and the run's log counts the trials per node.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.dataset import Task
from pipeline.grading import Judge, grade
from pipeline.rollout import Agent, Limits, Trajectory, User
from pipeline.trials.ray_cluster import (
    RayExecutorError,
    connect,
    here,
    import_ray,
    node_counts,
    plan_workers,
    wait_started,
)
from pipeline.trials.trial import TrialResult, run_trial, trial_seed
from pipeline.world import World

log = logging.getLogger(__name__)
__all__ = ["RayExecutor", "RayExecutorError", "TrialWorker", "import_ray", "lost_result"]


class TrialWorker:
    """Holds the world, agent, user and judge for the life of the actor (one trial per `run` call).

    Every result it hands back names the node it ran on (`TrialResult.node`, `node_ip`)."""

    def __init__(self, world, agent, user, judge, limits, seed: int, retries: int) -> None:
        self.world, self.agent, self.user, self.judge = world, agent, user, judge
        self.limits, self.seed, self.retries = limits, seed, retries
        self.node, self.node_ip = here()
        self.flight: Any = None  # the episodes in flight of `run_many` calls (`batch.SharedFlight`)
        self.flight_lock = threading.Lock()

    def _tag(self, result: TrialResult) -> TrialResult:
        result.node, result.node_ip = self.node, self.node_ip
        return result

    def run(self, task: Task, trial: int) -> TrialResult:
        return self._tag(
            run_trial(self.world, task, self.agent, self.user, trial, self.seed, self.limits, self.judge, self.retries)
        )

    def run_many(self, jobs: list[tuple[Task, int]], width: int) -> list[TrialResult]:
        """Several trials, `width` in flight together with their agent steps batched; results in `jobs` order.

        Concurrent calls (the actor takes as many as the executor keeps outstanding) share one set of episodes
        in flight, so a call's episodes join while the previous call's last ones still run."""
        from pipeline.trials.batch import SharedFlight

        with self.flight_lock:
            if self.flight is None or self.flight.width != width:
                args = (self.world, self.agent, self.user, self.seed, self.limits, self.judge, self.retries)
                self.flight = SharedFlight(*args, width=width)
            flight = self.flight
        return [self._tag(r) for r in flight.run_jobs(jobs)]

    def pid(self) -> int:
        return os.getpid()


@dataclass
class _Item:
    index: int
    task: Task
    trial: int
    losses: int = 0


class RayExecutor:
    """`run` has the serial executor's signature; `address=None` starts (or joins) a local Ray instance."""

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        in_flight_per_worker: int = 2,
        retries: int = 2,
        worker_losses: int = 2,
        judge: Judge | None = None,
        cpus_per_worker: float = 1.0,
        gpus_per_worker: float = 0.0,
        threads_per_worker: int = 1,
        batch: int = 1,
        start_timeout_s: float = 300.0,
        stall_timeout_s: float | None = 3600.0,
    ) -> None:
        self.address, self.workers = address, workers
        self.in_flight_per_worker = max(1, in_flight_per_worker)
        self.retries, self.worker_losses, self.judge = retries, worker_losses, judge
        self.cpus_per_worker, self.gpus_per_worker = cpus_per_worker, gpus_per_worker
        self.threads_per_worker = threads_per_worker
        self.batch = max(1, batch)
        self.start_timeout_s, self.stall_timeout_s = start_timeout_s, stall_timeout_s
        self.actors: list[Any] = []
        self.started_ray = False  # this executor started the local instance (so an interrupt shuts it down)
        self.peak_in_flight = 0  # most calls outstanding at once in the last run (bounded by design)

    def _ray(self) -> Any:
        ray, started = connect(self.address)
        self.started_ray = self.started_ray or started
        return ray

    def run(
        self,
        world: World,
        tasks: Sequence[Task],
        agent: Agent,
        user: User,
        trials: int,
        seed: int = 0,
        limits: Limits | None = None,
        on_result: Callable[[TrialResult], None] | None = None,
        skip: Collection[tuple[str, int]] = (),
    ) -> Iterator[TrialResult]:
        todo = [(task, trial) for task in tasks for trial in range(trials) if (task.id, trial) not in skip]
        items = deque(_Item(i, task, trial) for i, (task, trial) in enumerate(todo))
        if not items:
            return
        ray = self._ray()
        run = self._start(ray, world, agent, user, seed, limits, items)
        interrupted = False
        try:
            while items or run.in_flight:
                run.dispatch()
                self.peak_in_flight = max(self.peak_in_flight, len(run.in_flight))
                run.collect(run.wait())
                for result in run.in_order():
                    if on_result:
                        on_result(result)
                    yield result
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            self._stop(ray, interrupted)
            if run.ran_on:
                log.info("trials per Ray node: %s", node_counts(run.ran_on))

    def _start(
        self, ray: Any, world: World, agent: Agent, user: User, seed: int, limits: Limits | None, items: deque[_Item]
    ) -> _Run:
        """Start the workers (each holding the world, agent, user and judge) and wait until they are placed."""
        n_workers, per_cpu = plan_workers(
            ray, len(items), self.workers, self.cpus_per_worker, self.gpus_per_worker, own=self.started_ray
        )
        per_call = min(2 * self.batch, -(-len(items) // n_workers))  # a short run still reaches every worker
        remote = ray.remote(
            num_cpus=per_cpu,
            num_gpus=self.gpus_per_worker,
            max_restarts=0,
            # batched calls share the worker's episodes in flight: the next call must be able to join
            max_concurrency=max(self.threads_per_worker, self.in_flight_per_worker if self.batch > 1 else 1),
        )(TrialWorker)
        shared = [ray.put(x) for x in (world, agent, user, self.judge, limits)]

        def spawn() -> Any:
            actor = remote.remote(*shared, seed, self.retries)
            self.actors.append(actor)
            return actor

        run = _Run(
            self,
            ray,
            spawn,
            items,
            per_call,
            lambda item, why: lost_result(world, item.task, item.trial, seed, agent, user, why),
        )
        try:
            run.load.update({spawn(): 0 for _ in range(n_workers)})
            wait_started(ray, list(run.load), self.start_timeout_s, per_cpu, self.gpus_per_worker)
        except BaseException as exc:
            self._stop(ray, interrupted=isinstance(exc, KeyboardInterrupt))
            raise
        return run

    def _stop(self, ray: Any, interrupted: bool) -> None:
        self.close()
        if interrupted and self.started_ray:
            log.warning("interrupted: shutting down the local Ray instance")
            ray.shutdown()
            self.started_ray = False

    def close(self) -> None:
        """Stop this run's actors (the Ray instance itself stays up for the next run)."""
        ray = import_ray()
        for actor in self.actors:
            with contextlib.suppress(Exception):  # already dead
                ray.kill(actor, no_restart=True)
        self.actors.clear()


class _Run:
    """One run's bookkeeping: the workers and their load, and the trials waiting, in flight and done.

    A dead worker takes every trial in flight on it down, not only the one that killed it: a trial that was in
    flight at a death reruns alone on an idle worker, so that a second death is its own."""

    def __init__(
        self,
        executor: RayExecutor,
        ray: Any,
        spawn: Callable[[], Any],
        items: deque[_Item],
        per_call: int,
        give_up: Callable[[_Item, str], TrialResult],
    ) -> None:
        from ray.exceptions import ObjectLostError, RayActorError, RayTaskError, WorkerCrashedError

        self.lost_errors = (RayActorError, WorkerCrashedError, ObjectLostError)
        self.task_error = RayTaskError
        self.ex, self.ray, self.spawn, self.give_up = executor, ray, spawn, give_up
        self.items, self.per_call = items, per_call
        self.load: dict[Any, int] = {}
        self.alone: set[Any] = set()
        self.in_flight: dict[Any, tuple[Any, list[_Item]]] = {}
        self.done: dict[int, TrialResult] = {}
        self.next_index = 0
        self.ran_on: list[tuple[str | None, str | None]] = []  # (node id, node IP) of every trial a worker finished
        self.last_progress = time.monotonic()

    def lost(self, actor: Any, item: _Item, exc: BaseException) -> None:
        """A worker died under `item`: replace it and run the trial again, or give the trial up."""
        if actor in self.load:
            log.warning("worker lost while running task %s trial %d: %s", item.task.id, item.trial, exc)
            del self.load[actor]
            self.alone.discard(actor)
            self.ray.kill(actor, no_restart=True)
            self.load[self.spawn()] = 0
        item.losses += 1
        if item.losses <= self.ex.worker_losses:
            self.items.appendleft(item)
            return
        why = f"worker lost {item.losses} times: {type(exc).__name__}: {exc}"
        self.done[item.index] = self.give_up(item, why)

    def dispatch(self) -> None:
        """Hand waiting trials to workers until every worker has its share in flight."""
        items, load, batch = self.items, self.load, self.ex.batch
        while items:
            shared_ok = [a for a in load if a not in self.alone]
            if items[0].losses:  # a suspect: only on an idle worker, and nothing else beside it
                actor = next((a for a in shared_ok if load[a] == 0), None)
                if actor is None:
                    break
                self.alone.add(actor)
            else:
                actor = min(shared_ok, key=load.__getitem__, default=None)
                if actor is None or load[actor] >= self.ex.in_flight_per_worker:
                    break
            chunk = [items.popleft()]
            if chunk[0].losses or batch == 1:
                ref = actor.run.remote(chunk[0].task, chunk[0].trial)
            else:  # 2 × batch trials a call (the worker keeps `batch` in flight), or a share per worker
                while items and not items[0].losses and len(chunk) < self.per_call:
                    chunk.append(items.popleft())
                ref = actor.run_many.remote([(i.task, i.trial) for i in chunk], batch)
            self.in_flight[ref] = (actor, chunk)
            load[actor] += 1

    def wait(self) -> list[Any]:
        """The calls finished now; an error when none has finished within the stall deadline."""
        # Short waits, so Ctrl-C lands between them; the stall deadline bounds the whole wait.
        ready, _ = self.ray.wait(list(self.in_flight), num_returns=1, timeout=1.0)
        stall_timeout_s = self.ex.stall_timeout_s
        if ready:
            self.last_progress = time.monotonic()
        elif stall_timeout_s is not None and time.monotonic() - self.last_progress > stall_timeout_s:
            flying = [i for _, chunk in self.in_flight.values() for i in chunk]
            stuck = ", ".join(f"{i.task.id} trial {i.trial}" for i in flying[:5])
            raise RayExecutorError(
                f"no trial finished in {stall_timeout_s:g}s; {len(self.in_flight)} in flight ({stuck}):"
                " a worker is stuck (an endpoint that never answers?)"
            )
        return ready

    def collect(self, ready: list[Any]) -> None:
        """File the results of finished calls; a call whose worker died is rerun or given up."""
        for ref in ready:
            actor, chunk = self.in_flight.pop(ref)
            try:
                got = self.ray.get(ref)
                got = got if isinstance(got, list) else [got]
                for item, result in zip(chunk, got, strict=True):
                    self.done[item.index] = result
                self.ran_on.extend((r.node, r.node_ip) for r in got)
                log.debug("node %s (%s) ran %d trials", got[0].node_ip, got[0].node, len(got))
                self.load[actor] -= 1
                if chunk[0].losses:
                    self.alone.discard(actor)
            except self.task_error as exc:
                cause = exc.as_instanceof_cause()
                if not isinstance(cause, self.lost_errors):
                    raise cause from None  # a bug in the agent or world: same as the serial executor
                for item in reversed(chunk):
                    self.lost(actor, item, cause)
            except self.lost_errors as exc:
                for item in reversed(chunk):
                    self.lost(actor, item, exc)

    def in_order(self) -> Iterator[TrialResult]:
        """The results ready to hand back: each once every trial before it is done."""
        while self.next_index in self.done:
            result = self.done.pop(self.next_index)
            self.next_index += 1
            yield result


def lost_result(world: World, task: Task, trial: int, seed: int, agent: Agent, user: User, why: str) -> TrialResult:
    """The record of a trial no worker could finish: an infra_error trajectory and verdict."""
    traj = Trajectory(
        task_id=task.id,
        trial=trial,
        seed=trial_seed(seed, task.id, trial),
        agent=agent.name,
        user=user.name,
        world=world.name,
        termination="infra_error",
        error=why,
    )
    return TrialResult(task, trial, traj, grade(world, task, traj), attempts=0)
