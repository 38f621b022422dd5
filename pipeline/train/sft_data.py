"""SFT's data: trajectories read from jsonl, re-graded against their tasks, mixed with anchors, and the manifest
of what was read (files, hashes, counts) that the checkpoint records."""

from __future__ import annotations

import hashlib
import json
import logging
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.authoring import HeldOut
from pipeline.dataset import Task, read_tasks
from pipeline.errors import AgentloopError, InputError
from pipeline.grading import grade
from pipeline.rollout import Trajectory
from pipeline.world import load_world, resolve_domain

if TYPE_CHECKING:
    from pipeline.train.sft_config import SFTConfig

log = logging.getLogger(__name__)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_trajectories(path: Path) -> list[Trajectory]:
    """Trajectories, one per line: bare, or wrapped under "trajectory" (a curated selection's rows)."""
    out = []
    with Path(path).open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                out.append(Trajectory.model_validate(row.get("trajectory", row) if isinstance(row, dict) else row))
            except ValueError as exc:
                raise InputError(f"{path}:{number}: not a trajectory: {str(exc).splitlines()[0]}") from None
    return out


def world_prompt(traj: Trajectory) -> tuple[str, list[dict]]:
    """The policy and tool schemas the agent was given in a trajectory's world: the world's own when it loads by
    its name (`gen-7`), else its domain's (a τ²-bench directory is recorded by its name only)."""
    try:
        world = load_world(traj.world, traj.domain)
        return world.policy, world.tools.schemas()
    except AgentloopError:  # a world that does not load by its name (a τ²-bench directory elsewhere)
        domain = resolve_domain(traj.domain)
        return domain.policy(), domain.tools.schemas()


def verify(trajectories: list[Trajectory], tasks: dict[str, Task]) -> tuple[list[Trajectory], dict[str, int]]:
    """Keep trajectories whose task is known and whose re-graded verdict passes; unknown tasks are kept as given."""
    kept, counts = [], {"verified": 0, "failed_verification": 0, "unverified": 0, "infra_error": 0}
    for traj in trajectories:
        if traj.infra_error:
            counts["infra_error"] += 1
            continue
        task = tasks.get(traj.task_id)
        if task is None:
            counts["unverified"] += 1
            kept.append(traj)
            continue
        try:
            passed = grade(load_world(task.world, traj.domain), task, traj).passed
        except AgentloopError as exc:
            log.warning("cannot re-grade %s: %s", traj.task_id, exc)
            passed = False
        counts["verified" if passed else "failed_verification"] += 1
        if passed:
            kept.append(traj)
    return kept, counts


def mix_anchors(data: list[Trajectory], anchors: list[Trajectory], share: float, seed: int) -> list[Trajectory]:
    """`data` plus anchors making up `share` of the result (sampled without replacement while they last)."""
    if not anchors or share <= 0:
        return list(data)
    want = round(len(data) * share / (1 - share))
    rng = random.Random(seed)
    picked = rng.sample(anchors, min(want, len(anchors)))
    while len(picked) < want:
        picked.append(rng.choice(anchors))
    mixed = data + picked
    rng.shuffle(mixed)
    return mixed


def load_data(params: SFTConfig) -> tuple[list[Trajectory], dict[str, Any]]:
    by_file = {path: read_tasks(path) for path in params.tasks}
    tasks = {t.id: t for read in by_file.values() for t in read}
    data_files = {path: read_trajectories(path) for path in params.data}
    anchor_files = {path: read_trajectories(path) for path in params.anchors}
    # no evaluation customer trains (`pipeline.authoring.heldout`): the tasks (in the trajectories' domain, which
    # loads their world), then each trajectory through its task and whom it authenticated
    guard = HeldOut.read(params.held_out)
    domains = {t.domain for read in (*data_files.values(), *anchor_files.values()) for t in read}
    domain = next(iter(domains)) if len(domains) == 1 else None
    for path, read_tasks_ in by_file.items():
        guard.check_tasks(read_tasks_, str(path), domain)
    for path, trajs in (*data_files.items(), *anchor_files.items()):
        guard.check_trajectories(trajs, tasks, str(path))
    data, data_counts = verify([t for read in data_files.values() for t in read], tasks)
    anchors, anchor_counts = verify([t for read in anchor_files.values() for t in read], tasks)
    mixed = mix_anchors(data, anchors, params.anchor_share, params.seed)
    manifest = {
        "data": [{"path": str(p), "sha256": file_sha256(p)} for p in params.data],
        "anchors": [{"path": str(p), "sha256": file_sha256(p)} for p in params.anchors],
        "tasks": [{"path": str(p), "sha256": file_sha256(p)} for p in params.tasks],
        "data_counts": data_counts,
        "anchor_counts": anchor_counts,
        "examples": len(mixed),
        "anchor_examples": len(mixed) - len(data),
    }
    return mixed, manifest
