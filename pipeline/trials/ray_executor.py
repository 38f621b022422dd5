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

from pipeline.dataset.task import Task
from pipeline.grading.grader import grade
from pipeline.grading.judge import Judge
from pipeline.rollout.protocols import Agent, User
from pipeline.rollout.runner import Limits
from pipeline.rollout.trajectory import Trajectory
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
from pipeline.world.tables import World

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
        from ray.exceptions import ObjectLostError, RayActorError, RayTaskError, WorkerCrashedError

        lost_errors = (RayActorError, WorkerCrashedError, ObjectLostError)
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

        load: dict[Any, int] = {}
        try:
            load.update({spawn(): 0 for _ in range(n_workers)})
            wait_started(ray, list(load), self.start_timeout_s, per_cpu, self.gpus_per_worker)
        except BaseException as exc:
            self._stop(ray, interrupted=isinstance(exc, KeyboardInterrupt))
            raise
        # A dead worker takes every trial in flight on it down, not only the one that killed it: a trial that
        # was in flight at a death reruns alone on an idle worker, so that a second death is its own.
        alone: set[Any] = set()
        in_flight: dict[Any, tuple[Any, list[_Item]]] = {}
        done: dict[int, TrialResult] = {}

        def lost(actor: Any, item: _Item, exc: BaseException) -> None:
            """A worker died under `item`: replace it and run the trial again, or give the trial up."""
            if actor in load:
                log.warning("worker lost while running task %s trial %d: %s", item.task.id, item.trial, exc)
                del load[actor]
                alone.discard(actor)
                ray.kill(actor, no_restart=True)
                load[spawn()] = 0
            item.losses += 1
            if item.losses <= self.worker_losses:
                items.appendleft(item)
                return
            why = f"worker lost {item.losses} times: {type(exc).__name__}: {exc}"
            done[item.index] = lost_result(world, item.task, item.trial, seed, agent, user, why)

        next_index = 0
        interrupted = False
        ran_on: list[tuple[str | None, str | None]] = []  # (node id, node IP) of every trial a worker finished
        last_progress = time.monotonic()
        try:
            while items or in_flight:
                while items:
                    shared_ok = [a for a in load if a not in alone]
                    if items[0].losses:  # a suspect: only on an idle worker, and nothing else beside it
                        actor = next((a for a in shared_ok if load[a] == 0), None)
                        if actor is None:
                            break
                        alone.add(actor)
                    else:
                        actor = min(shared_ok, key=load.__getitem__, default=None)
                        if actor is None or load[actor] >= self.in_flight_per_worker:
                            break
                    chunk = [items.popleft()]
                    if chunk[0].losses or self.batch == 1:
                        ref = actor.run.remote(chunk[0].task, chunk[0].trial)
                    else:  # 2 × batch trials a call (the worker keeps `batch` in flight), or a share per worker
                        while items and not items[0].losses and len(chunk) < per_call:
                            chunk.append(items.popleft())
                        ref = actor.run_many.remote([(i.task, i.trial) for i in chunk], self.batch)
                    in_flight[ref] = (actor, chunk)
                    load[actor] += 1
                self.peak_in_flight = max(self.peak_in_flight, len(in_flight))
                # Short waits, so Ctrl-C lands between them; the stall deadline bounds the whole wait.
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
                if ready:
                    last_progress = time.monotonic()
                elif self.stall_timeout_s is not None and time.monotonic() - last_progress > self.stall_timeout_s:
                    flying = [i for _, chunk in in_flight.values() for i in chunk]
                    stuck = ", ".join(f"{i.task.id} trial {i.trial}" for i in flying[:5])
                    raise RayExecutorError(
                        f"no trial finished in {self.stall_timeout_s:g}s; {len(in_flight)} in flight ({stuck}):"
                        " a worker is stuck (an endpoint that never answers?)"
                    )
                for ref in ready:
                    actor, chunk = in_flight.pop(ref)
                    try:
                        got = ray.get(ref)
                        got = got if isinstance(got, list) else [got]
                        for item, result in zip(chunk, got, strict=True):
                            done[item.index] = result
                        ran_on.extend((r.node, r.node_ip) for r in got)
                        log.debug("node %s (%s) ran %d trials", got[0].node_ip, got[0].node, len(got))
                        load[actor] -= 1
                        if chunk[0].losses:
                            alone.discard(actor)
                    except RayTaskError as exc:
                        cause = exc.as_instanceof_cause()
                        if not isinstance(cause, lost_errors):
                            raise cause from None  # a bug in the agent or world: same as the serial executor
                        for item in reversed(chunk):
                            lost(actor, item, cause)
                    except lost_errors as exc:
                        for item in reversed(chunk):
                            lost(actor, item, exc)
                while next_index in done:
                    result = done.pop(next_index)
                    next_index += 1
                    if on_result:
                        on_result(result)
                    yield result
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            self._stop(ray, interrupted)
            if ran_on:
                log.info("trials per Ray node: %s", node_counts(ran_on))

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
