"""Joining Ray for the Ray executor: a local instance the run starts (and owns), or an existing cluster it only
connects to (and never stops), and how many workers that cluster can hold.

The address is the one given (`--address`, `measure.ray_address`), else Ray's own `RAY_ADDRESS` environment
variable, else `local`: a fresh instance on this machine. `auto` joins the cluster `ray start` started on this
machine. An address nothing answers at fails at once, naming it, instead of Ray's minutes of retries.
"""

from __future__ import annotations

import importlib
import logging
import os
import socket
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

from pipeline.errors import InfrastructureError, InputError

log = logging.getLogger(__name__)
ADDRESS_ENV = "RAY_ADDRESS"  # Ray's convention: ray.init() and the `ray` CLI read it too


class RayExecutorError(InfrastructureError, TimeoutError):
    """Workers that cannot start, or trials that never finish: the run stops instead of waiting forever."""


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise InputError("the ray executor needs Ray: pip install 'agentloop[ray]'") from exc
    return ray


def check_client(address: str) -> None:
    """A `ray://` address is joined through Ray's client, which needs the `ray[client]` extra (grpc): without it,
    an InputError naming the address (Ray itself would raise a ValueError from deep inside `ray.init`)."""
    if not address.startswith("ray://"):
        return
    try:
        importlib.import_module("grpc")  # the extra's own dependency (no type stubs: imported by name)
        importlib.import_module("ray.util.client")
    except ImportError as exc:
        raise InputError(
            f"Ray address {address!r}: a ray:// address needs Ray's client (pip install 'ray[client]')"
        ) from exc


def resolve_address(address: str | None) -> str:
    """The address to join: `address`, else $RAY_ADDRESS, else `local` (a new instance owned by this run)."""
    return address or os.environ.get(ADDRESS_ENV) or "local"


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """A HOST:PORT that nothing listens at is an InfrastructureError naming it (ray.init would retry for minutes)."""
    if address in ("local", "auto") or "://" in address:
        return  # a new instance, the one found on this machine, or a Ray Client address: Ray checks those
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"Ray address {address!r}: expected HOST:PORT, ray://HOST:PORT, auto or local")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise InfrastructureError(
            f"no Ray cluster answers at {address} ({exc}); start one (`ray start --head`) or fix the address"
            f" (--address, measure.ray_address or ${ADDRESS_ENV})"
        ) from exc


def connect(address: str | None) -> tuple[Any, bool]:
    """(ray, whether this call started the Ray instance); an already initialised Ray is used as it is."""
    ray = import_ray()
    target = resolve_address(address)
    check_client(target)  # before the shortcut below: the same address gets the same answer in any process
    if ray.is_initialized():
        return ray, False
    check_reachable(target)
    try:
        ray.init(address=target, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    except ConnectionError as exc:  # a Ray Client address nothing answers at (Ray checks those itself)
        raise InfrastructureError(f"no Ray cluster answers at {target}: {exc}") from exc
    started = target == "local"
    if not started:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        log.info(
            "connected to the Ray cluster at %s: %d nodes, %s (it stays up after the run)",
            target,
            len(nodes),
            resources_text(ray.cluster_resources()),
        )
    return ray, started


def plan_workers(
    ray: Any, n_items: int, workers: int | None, cpus_per_worker: float, gpus_per_worker: float, own: bool
) -> tuple[int, float]:
    """(workers, CPUs per worker) that the cluster can place: more workers than CPUs share them.

    Without `workers`, one worker per CPU of the whole cluster (all nodes); on a cluster this run did not start
    (`own` False) only the CPUs free now count, since other jobs may hold the rest."""
    total = ray.cluster_resources()
    cpus, gpus = float(total.get("CPU", 0)), float(total.get("GPU", 0))
    per_cpu = cpus_per_worker
    if workers:
        n = max(1, min(workers, n_items))
    else:
        free = cpus if own else min(cpus, float(ray.available_resources().get("CPU", 0)))
        n = max(1, min(int(free // max(per_cpu, 1e-9)) or 1, n_items))
    if gpus_per_worker > 0:
        fit = int(gpus // gpus_per_worker)
        if fit < 1:
            raise RayExecutorError(f"each worker asks for {gpus_per_worker:g} GPU but the Ray cluster has {gpus:g}")
        if n > fit:
            log.warning("%d workers asked for, %g GPUs at %g each: running %d", n, gpus, gpus_per_worker, fit)
            n = fit
    if per_cpu > 0 and cpus > 0 and n * per_cpu > cpus:
        shared = int(cpus / n * 10_000) / 10_000  # Ray's resource precision
        if shared <= 0:
            raise RayExecutorError(f"{n} workers cannot share {cpus:g} CPUs; ask for fewer workers")
        log.warning("%d workers on %g CPUs: each gets %g CPU, not %g (sharing cores)", n, cpus, shared, per_cpu)
        per_cpu = shared
    log.info(
        "%d Ray workers at %g CPU and %g GPU each; the cluster has %s",
        n,
        per_cpu,
        gpus_per_worker,
        resources_text(total),
    )
    return n, per_cpu


def wait_started(ray: Any, actors: list[Any], timeout_s: float, per_cpu: float, per_gpu: float) -> None:
    """Wait (at most timeout_s) until every worker is up; the error names what the workers ask for."""
    pending = {actor.pid.remote(): actor for actor in actors}
    deadline = time.monotonic() + timeout_s
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RayExecutorError(
                f"{len(pending)} of {len(actors)} Ray workers did not start within {timeout_s:g}s;"
                f" each asks for {per_cpu:g} CPU and {per_gpu:g} GPU, the cluster has"
                f" {resources_text(ray.cluster_resources())} ({resources_text(ray.available_resources())} free)"
            )
        ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=min(1.0, left))
        for ref in ready:
            pending.pop(ref)
            ray.get(ref)  # a worker that died while starting raises here


def here() -> tuple[str | None, str | None]:
    """(Ray node id, node IP) of the calling process; (None, None) outside Ray."""
    ray = import_ray()
    if not ray.is_initialized():
        return None, None
    return ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address()


def node_counts(nodes: Iterable[tuple[str | None, str | None]]) -> str:
    """'IP (id prefix): trials' per node, most trials first (for the run's log)."""
    counts = Counter(nodes)
    return ", ".join(f"{ip} ({(nid or '?')[:8]}): {n}" for (nid, ip), n in counts.most_common())


def resources_text(resources: dict[str, float]) -> str:
    return ", ".join(f"{resources.get(k, 0):g} {k}" for k in ("CPU", "GPU"))
