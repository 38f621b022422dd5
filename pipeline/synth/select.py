"""Synthesis by selection: for a domain whose tasks cannot be grown from templates but come from a large pool
disjoint from the held-out ones (τ²-bench telecom: the set-up of each task breaks the customer's phone its own
way), "synthesizing" for the targets means choosing from the pool the tasks aimed at the cells where the
measurement saw each failure mode, each verified by the world before it is kept.

A domain opts in by returning a `SelectionKit` from its `synthesis()` capability; the generic synthesize stage,
the failure cells and the anchors read it through the functions below. Verification is by execution, as for
grown tasks: the gold replay (its set-up, then its gold actions each on its own side) refuses no call and meets
every env assertion; the domain's oracle solves it against the scripted customer (its passing run is the gold
trajectory); with the flaw check on, the flawed agent planting the targeted mode fails it. Same pool, targets
and seed: same tasks.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from pipeline.authoring import SelectionKit
from pipeline.dataset import Task, check_assertions, replay_gold
from pipeline.grading import grade
from pipeline.rollout import run_episode
from pipeline.synth.result import SynthesisResult

if TYPE_CHECKING:
    from pipeline.rollout import Trajectory
    from pipeline.synth.config import SynthConfig
    from pipeline.synth.verify import VerifyConfig
    from pipeline.target import Targets
    from pipeline.world import World

log = logging.getLogger(__name__)


class Selector:
    def __init__(self, world: World, targets: Targets, config: SynthConfig, kit: SelectionKit) -> None:
        from pipeline.synth.verify import Verifier

        self.world, self.targets, self.config, self.kit = world, targets, config, kit
        self.verifier = Verifier(world, config.verify)
        self.rng = random.Random(f"select:{world.name}:{config.seed}")
        self.pool = kit.pool(world)
        self.tried: set[str] = set()
        self.outcomes: Counter = Counter()
        self.flaw: dict[str, Counter] = {}
        self.covered: Counter = Counter()

    def run(self, on_task: Callable[[Task], None] | None = None) -> SynthesisResult:
        result = SynthesisResult()
        modes = [m for m, t in self.targets.modes.items() if t.count > 0]
        need = {m: self.targets.modes[m].count for m in modes}
        tries = {m: 4 * need[m] + 8 for m in modes}  # candidates a mode may verify, as a generator's attempts
        aims: Counter = Counter()
        while any(need[m] > 0 for m in modes):
            for mode in modes:
                if need[mode] <= 0:
                    continue
                picked = self._pick(mode) if tries[mode] > 0 else None
                if picked is None:
                    log.warning("selection for %s stops %d short: the pool has no more to verify", mode, need[mode])
                    need[mode] = 0
                    continue
                tries[mode] -= 1
                task, aim = picked
                traj = self._verify(task, mode)
                if traj is None:
                    continue
                dials = {**task.provenance.dials, "aim": aim, "pool": "train"}
                task = task.model_copy(
                    update={"provenance": task.provenance.model_copy(update={"failure_mode": mode, "dials": dials})}
                )
                result.tasks.append(task)
                result.trajectories.append(traj)
                self.covered.update(self.kit.cells(task))
                aims[aim] += 1
                need[mode] -= 1
                if on_task:
                    on_task(task)
        result.manifest = self._manifest(result, aims)
        return result

    def _pick(self, mode: str) -> tuple[Task, str] | None:
        """A measured-cell task (drawn by its cells' failure weight) at `measured_share`, else the task covering
        most cells not yet covered; None when the pool is spent."""
        free = [t for t in self.pool if t.id not in self.tried and mode in self.kit.modes(t)]
        if not free:
            return None
        weights = self.targets.cells.get(mode, {})
        if weights and self.rng.random() < self.config.measured_share:
            scored = [(t, sum(weights.get(c, 0.0) for c in self.kit.cells(t))) for t in free]
            scored = [(t, w) for t, w in scored if w > 0]
            if scored:
                task = self.rng.choices([t for t, _ in scored], weights=[w for _, w in scored], k=1)[0]
                self.tried.add(task.id)
                return task, "measured"
        self.rng.shuffle(free)
        task = max(free, key=lambda t: sum(1 for c in self.kit.cells(t) if not self.covered[c]))
        self.tried.add(task.id)
        return task, "coverage"

    def _verify(self, task: Task, mode: str) -> Trajectory | None:
        why = verify_task(self.world, task, self.verifier, self.config.verify, mode)
        self.outcomes[why[0]] += 1
        if why[0] != "ok":
            log.info("dropped %s: %s", task.id, why[1])
            return None
        self.flaw.setdefault(mode, Counter())[why[2]] += 1
        return why[3]

    def _manifest(self, result: SynthesisResult, aims: Counter) -> dict:
        tasks = result.tasks
        return {
            "world": self.world.name,
            "seed": self.config.seed,
            "selection": True,
            "pool": len(self.pool),
            "tasks": len(tasks),
            "targets": {m: t.count for m, t in self.targets.modes.items()},
            "counts": {
                "by_mode": dict(sorted(Counter(t.provenance.failure_mode for t in tasks).items())),
                "by_aim": dict(sorted(aims.items())),
                "by_cell": dict(sorted(Counter(c for t in tasks for c in self.kit.cells(t)).items())),
            },
            "verification": dict(sorted(self.outcomes.items())),
            "flaw_check": {m: dict(sorted(c.items())) for m, c in sorted(self.flaw.items())},
        }


def verify_task(world: World, task: Task, verifier, config: VerifyConfig, mode: str | None = None) -> tuple:
    """(kind, detail, flaw, trajectory): kind 'ok', 'gold_refused', 'assertion_unmet', 'oracle_failed' or
    'flaw_undetected'; the trajectory is the oracle's passing run."""
    session = replay_gold(world, task)
    refused = [f"{e.name}: {e.error}" for e in session.log if not e.ok]
    if refused:
        return "gold_refused", refused[:2], "off", None
    assertions = task.evaluation.env_assertions if task.evaluation else []
    unmet = [f"{r.func_name}: {r.error or 'not met'}" for r in check_assertions(session, assertions) if not r.met]
    if unmet:
        return "assertion_unmet", unmet[:2], "off", None
    traj = None
    for trial in range(config.oracle_trials):
        t = run_episode(world, task, verifier.oracle, verifier.user, trial=trial, limits=config.limits)
        v = grade(world, task, t, config.limits)
        if not v.passed:
            return "oracle_failed", [f"trial {trial}: {c}" for c in v.failed_components] or [t.termination], "off", None
        traj = traj or t
    flaw = "off"
    if config.flaw_check and mode is not None:
        agent = verifier.flaws({mode: 1.0}, seed=config.flaw_seed)
        if not agent.planted(task, 0):
            flaw = "not_plantable"
        else:
            t = run_episode(world, task, agent, verifier.user, trial=0, limits=config.limits)
            flaw = "undetected" if grade(world, task, t, config.limits).passed else "detected"
            if flaw == "undetected":
                return "flaw_undetected", [f"flawed agent ({mode}) passes it"], flaw, None
    return "ok", [], flaw, traj


def select(
    world: World,
    targets: Targets,
    config: SynthConfig,
    kit: SelectionKit,
    on_task: Callable[[Task], None] | None = None,
) -> SynthesisResult:
    return Selector(world, targets, config, kit).run(on_task)


def anchor_trajectories(
    world: World,
    kit: SelectionKit,
    n: int,
    seed: int,
    config: VerifyConfig,
    exclude: frozenset[str] | set[str] = frozenset(),
) -> list:
    """Gold trajectories of `n` pool tasks drawn with `seed`, none of `exclude` (the tasks selected for the
    targets): the oracle's passing runs of verified tasks."""
    from pipeline.synth.verify import Verifier

    pool = [t for t in kit.pool(world) if t.id not in exclude]
    random.Random(f"anchors:{world.name}:{seed}").shuffle(pool)
    verifier = Verifier(world, config.model_copy(update={"flaw_check": False}))
    out: list[Trajectory] = []
    for task in pool:
        if len(out) >= n:
            break
        kind, _, _, traj = verify_task(world, task, verifier, config)
        if kind == "ok":
            out.append(traj)
    return out
