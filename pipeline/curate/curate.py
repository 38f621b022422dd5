"""`agentloop curate`: from a pool of trajectories to a verified, deduplicated, difficulty-banded selection.

Steps: read the pool; replay-verify every trajectory in the world; keep, per distinct task, one verified
passing trajectory (the demonstration); probe the current agent n times on each such task; band the
Jeffreys posterior; mix anchors and targets at the set ratio. Outputs `selected.jsonl` (one row per task,
with its demonstration) and `manifest.json` (band histogram, ratio, rejections by reason).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pipeline.agents import make_agent
from pipeline.authoring import held_out
from pipeline.curate.config import CurateConfig
from pipeline.curate.pool import PoolItem, Rejection, read_pool
from pipeline.curate.select import Probed, mix, task_key, trajectory_key
from pipeline.curate.verify import Verified, replay_verify
from pipeline.dataset import Task, check_provenance, read_tasks
from pipeline.errors import InputError
from pipeline.outputs import staged_folder
from pipeline.rollout import Agent
from pipeline.trials import SerialExecutor, TrialResult
from pipeline.users import ScriptedUser
from pipeline.world import World, load_world

log = logging.getLogger(__name__)


def _executor(config: CurateConfig):
    """Probes run like measured trials (same seeds, retries of infrastructure errors, verdicts)."""
    if config.executor == "ray":
        from pipeline.trials import RayExecutor

        return RayExecutor(address=config.ray_address, workers=config.workers, batch=config.concurrency)
    return SerialExecutor(batch=config.concurrency)


def curate(
    config: CurateConfig,
    out_dir: Path,
    on_probe: Callable[[TrialResult], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> dict:
    """Verify the pool, probe each task `config.probes` times, keep the bands; `on_total` hears the probe count
    once it is known (after verification), `on_probe` every finished probe."""
    tasks_file, world_ref, agent_spec = config.tasks, config.world, config.agent
    if tasks_file is None or world_ref is None or agent_spec is None or not config.pool:
        raise InputError(f"CurateConfig: no {', '.join(config.missing())} given (a curation run needs each)")
    world = load_world(world_ref, config.domain)
    for entry in config.pool:  # a pool made in another domain or world (or its tables since changed): refused
        check_provenance(entry, world)
    guard = held_out([config.held_out], world)  # no evaluation customer trains (`pipeline.authoring.heldout`)
    read = read_tasks(tasks_file)
    guard.check_tasks(read, str(tasks_file), config.domain)
    tasks = {t.id: t for t in read}
    items, errors = read_pool(list(config.pool))
    for item in items:
        guard.check_trajectories([item.trajectory], tasks, item.source)
    rejected: list[Rejection] = list(errors)
    demos, verified = _demonstrations(world, tasks, items, config, rejected)
    mismatched = [r for r in rejected if r.reason in ("wrong_world", "unknown_task")]
    if items and not verified and len(mismatched) == len(items):
        # nothing in the pool belongs with this world and task file: inputs that do not go together, not an
        # empty selection
        example = mismatched[0]
        raise InputError(
            f"none of the pool's {len(items)} trajectories belongs with world {world.name!r} and {config.tasks}"
            f" ({example.reason}: {example.detail}); give the world and task file the pool was made in"
        )
    agent = make_agent(agent_spec, world.domain)
    if on_total:
        on_total(len(demos) * config.probes)
    probed = _probe(config, world, agent, demos, rejected, on_probe)
    selected = mix(probed, config.bands, config.anchor_ratio, config.max_items)
    guard.check_trajectories([p.trajectory for p in selected], tasks, str(out_dir / "selected.jsonl"))
    labels = config.bands.labels()
    with staged_folder(out_dir) as staging:  # whole or not at all: manifest.json with its selection
        with (staging / "selected.jsonl").open("w") as fh:
            for p in selected:
                row = {
                    "task_id": p.task.id,
                    "role": p.role,
                    "probes": p.n,
                    "passes": p.passes,
                    "band": labels[p.band],
                    "masses": [round(m, 6) for m in p.masses],
                    "trajectory": p.trajectory.model_dump(mode="json"),
                }
                fh.write(json.dumps(row, sort_keys=True) + "\n")
        pool = {"trajectories": len(items) + len(errors), "verified": verified, "tasks_with_demo": len(demos)}
        manifest = _manifest(config, world.name, agent.name, pool, probed, selected, rejected)
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    log.info("curate: %d selected of %d verified trajectories", len(selected), verified)
    return manifest


def _demonstrations(
    world: World, tasks: dict[str, Task], items: list[PoolItem], config: CurateConfig, rejected: list[Rejection]
) -> tuple[dict[str, Verified], int]:
    """Replay-verify the pool and keep one passing trajectory per distinct task; the others join `rejected`.

    Returns the demonstrations by task id and the number of trajectories that verified."""
    demos: dict[str, Verified] = {}
    seen_traj: set[str] = set()
    seen_task: dict[str, str] = {}
    verified = 0
    for item in items:
        got = replay_verify(world, tasks, item, config.limits)
        if isinstance(got, Rejection):
            rejected.append(got)
            continue
        verified += 1
        key = trajectory_key(got.item.trajectory)
        if key in seen_traj:
            rejected.append(Rejection(item.source, "duplicate_trajectory", "same conversation as an earlier one"))
            continue
        seen_traj.add(key)
        if not got.verdict.passed:
            rejected.append(Rejection(item.source, "failed_verdict", ", ".join(got.verdict.failed_components)))
            continue
        if got.task.id in demos:
            rejected.append(Rejection(item.source, "task_has_demo", f"task {got.task.id} already has one"))
            continue
        first = seen_task.setdefault(task_key(got.task), got.task.id)
        if first != got.task.id:
            rejected.append(Rejection(item.source, "duplicate_task", f"same task as {first}"))
            continue
        demos[got.task.id] = got
    return demos, verified


def _probe(
    config: CurateConfig,
    world: World,
    agent: Agent,
    demos: dict[str, Verified],
    rejected: list[Rejection],
    on_probe: Callable[[TrialResult], None] | None,
) -> list[Probed]:
    """Run the agent `config.probes` times on each demonstrated task and band its pass rate; tasks too hard, too
    easy or never probed join `rejected`."""
    tally: dict[str, list[int]] = {task_id: [0, 0] for task_id in demos}  # valid probes, passes
    for result in _executor(config).run(
        world, [d.task for d in demos.values()], agent, ScriptedUser(), config.probes, config.seed, config.limits
    ):
        if not result.verdict.infra_error:
            tally[result.task.id][0] += 1
            tally[result.task.id][1] += result.verdict.passed
        if on_probe:
            on_probe(result)
    probed: list[Probed] = []
    for task_id, demo in demos.items():
        n, passes = tally[task_id]
        if n == 0:
            rejected.append(Rejection(demo.item.source, "probes_lost", "every probe hit an infrastructure error"))
            continue
        masses = config.bands.masses(passes, n)
        probed.append(Probed(demo.task, demo.item.trajectory, n, passes, masses, config.bands.band(passes, n)))
    labels = config.bands.labels()
    for p in probed:
        if p.band == 0:
            rejected.append(Rejection(p.task.id, "too_hard", f"{p.passes}/{p.n} passes: most mass in {labels[0]}"))
        elif p.band == len(labels) - 1:
            rejected.append(Rejection(p.task.id, "too_easy", f"{p.passes}/{p.n} passes: most mass in {labels[-1]}"))
    return probed


def _manifest(
    config: CurateConfig,
    world: str,
    agent: str,
    pool: dict[str, int],
    probed: list[Probed],
    selected: list[Probed],
    rejected: list[Rejection],
) -> dict:
    """manifest.json: the band histogram, the anchor/target ratio met, and the rejections by reason."""
    labels = config.bands.labels()
    roles = Counter(p.role for p in selected)
    share = roles.get("anchor", 0) / len(selected) if selected else 0.0
    kept = [p for p in probed if config.bands.keep(p.passes, p.n)]
    return {
        "world": world,
        "agent": agent,
        "probes": config.probes,
        "edges": config.bands.edges,
        "pool": pool,
        "band_histogram": {labels[i]: sum(1 for p in probed if p.band == i) for i in range(len(labels))},
        "kept_tasks": len(kept),
        "selected": len(selected),
        "ratio": {
            "requested_anchor_share": config.anchor_ratio,
            "anchors": roles.get("anchor", 0),
            "targets": roles.get("target", 0),
            "anchor_share": round(share, 4) if selected else None,
            "anchors_available": sum(1 for p in kept if p.role == "anchor"),
            "targets_available": sum(1 for p in kept if p.role == "target"),
            "met": bool(selected) and abs(share - config.anchor_ratio) <= 1.0 / len(selected) + 1e-9,
        },
        "rejections": dict(sorted(Counter(r.reason for r in rejected).items())),
        "rejected": [{"source": r.source, "reason": r.reason, "detail": r.detail} for r in rejected[:200]],
    }
