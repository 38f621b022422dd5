"""`agentloop synthesize`: targeted, evolved, verified tasks and their gold trajectories.

Generation 0 makes every atomic template once (or, with `atomic_share` below 1, the templates the measurement
failed in and as many others as that share of the budget allows). Each later generation spends part of every mode's
remaining budget on descendants: most aimed at the cells the measurement saw that mode fail in (`Targets.cells`,
drawn by weight; optionally a refusal cell's twin, the same write where the policy allows it, or a write cell's
refused twin, the same write where it forbids it), the rest at the cells the
coverage tracker has least covered, with the difficulty dials the targets set. Every candidate is verified
(gold replay, static rules, the oracle solves it, the targeted flaw fails it) and reworked when it fails. Gold
trajectories are the oracle's passing runs.
Only a generated world may be used: training data never comes from the evaluation world.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
from collections.abc import Callable
from pathlib import Path

from pipeline.authoring import (
    PLAIN,
    CoverageTracker,
    Partitioned,
    SelectionKit,
    TemplateSpec,
    ensure_generated,
    kit_of,
    needs_partition,
    partition,
    template_kit_of,
)
from pipeline.authoring import EvalWorldError as EvalWorldError
from pipeline.authoring import held_out as held
from pipeline.dataset import (
    PROVENANCE_FILE,
    ProvenanceError,
    Task,
    check_record,
    file_sha256,
    provenance_text,
    write_tasks,
)
from pipeline.dataset.provenance import Provenance
from pipeline.errors import InputError
from pipeline.grading.modes import FAILURE_MODES
from pipeline.outputs import staged_folder
from pipeline.synth.candidate import Spec, build
from pipeline.synth.config import SynthConfig
from pipeline.synth.evolve import Lineage, apply_dial, descendant, parents_for
from pipeline.synth.judge import JudgeCascade
from pipeline.synth.manifest import synthesis_manifest
from pipeline.synth.result import SynthesisResult
from pipeline.synth.rework import Outcome, Reworker
from pipeline.synth.select import select
from pipeline.synth.verify import Verifier
from pipeline.target import Targets
from pipeline.world import World, domain_label, domain_spec

log = logging.getLogger(__name__)


class Synthesizer:
    def __init__(self, world: World, targets: Targets, config: SynthConfig | None = None) -> None:
        ensure_generated(world)
        self.kit = template_kit_of(world.domain, needed_for="synthesize")
        self.taxonomy = self.kit.taxonomy
        unknown = sorted(set(targets.modes) - set(FAILURE_MODES))
        if unknown:
            raise InputError(f"targets name unknown failure mode(s) {unknown}; known: {list(FAILURE_MODES)}")
        self.world, self.targets, self.config = world, targets, config or SynthConfig()
        cfg = self.config
        self.ctx = self.kit.ground(world)
        self.partition = None
        if needs_partition(world):
            self.partition = partition(world)  # the world's one split, as held-out generation's
            self.ctx = Partitioned(self.ctx, self.partition, "train")
        judge = JudgeCascade(cfg.judge, self.kit.business) if cfg.judge else None
        self.verifier = Verifier(world, cfg.verify, judge)
        self.reworker = Reworker(self.kit, self.ctx, self.verifier, cfg.seed, cfg.max_rework)
        self.coverage = CoverageTracker(self.kit)
        self.rng = random.Random(f"synth:{world.name}:{cfg.seed}")
        self.lineages: list[Lineage] = []
        self.result = SynthesisResult()
        self.outcomes: list[Outcome] = []
        self.generation = 0
        self._n = 0
        self._aim = "atomic"  # what the next candidate aims at: atomic, measured (cells), twin, refused_twin, coverage

    def need(self, mode: str) -> int:
        made = sum(1 for x in self.lineages if x.spec.mode == mode)
        return self.targets.modes[mode].count - made

    def run(self, on_task: Callable[[Task], None] | None = None) -> SynthesisResult:
        modes = [m for m, t in self.targets.modes.items() if t.count > 0]
        for name, spec in self._atomic_templates():  # generation 0
            tagged = [m for m in spec.modes if m in modes] or list(spec.modes)
            mode = max(tagged, key=lambda m: (self.need(m) if m in self.targets.modes else -1, -tagged.index(m)))
            self._try(Spec(parts=(name,), mode=mode, items=1 if spec.items else None), on_task)
        for g in range(1, self.config.max_generations + 1):
            self.generation = g
            if all(self.need(m) <= 0 for m in modes):
                break
            quota = {
                m: min(self.need(m), math.ceil(self.config.generation_share * self.targets.modes[m].count))
                for m in modes
            }
            while any(q > 0 for q in quota.values()):
                for m in modes:
                    if quota[m] > 0:
                        quota[m] -= 1
                        self._try(self._child(m), on_task)
        self.result.manifest = self.manifest()
        return self.result

    def _atomic_templates(self) -> list[tuple[str, TemplateSpec]]:
        """(name, template) of generation 0: every template, or (atomic_share < 1) the measured templates and the
        first others the share of the budget allows."""
        items = list(self.taxonomy.items())
        if self.config.atomic_share >= 1:
            return items
        measured = {c.split("/")[0] for cells in self.targets.cells.values() for c in cells}
        budget = sum(t.count for t in self.targets.modes.values())
        others = math.floor(self.config.atomic_share * budget)
        out = []
        for name, spec in items:
            if name not in measured:
                if others <= 0:
                    continue
                others -= 1
            out.append((name, spec))
        return out

    def _child(self, mode: str) -> Spec | None:
        allowed = self.config.dials
        measured = {
            c: w
            for c, w in self.targets.cells.get(mode, {}).items()
            if c.split("/")[0] in self.taxonomy and (allowed is None or c.split("/")[1] in (*allowed, PLAIN))
        }
        if measured and self.rng.random() < self.config.measured_share:
            for _ in range(8):
                template, dial, _ = self.rng.choices(list(measured), weights=list(measured.values()), k=1)[0].split("/")
                aim, other = "measured", self.taxonomy.twin(template)
                if other and self.config.twin_share and self.rng.random() < self.config.twin_share:
                    template, aim = other, "twin"
                    dial = dial if dial in self.taxonomy[template].dials() else PLAIN
                elif (
                    self.config.refusal_twin_share
                    and self.taxonomy.refusals(template)
                    and self.rng.random() < self.config.refusal_twin_share
                ):
                    template, aim = self._refused_twin(template, mode), "refused_twin"
                    dial = dial if dial in self.taxonomy[template].dials() else PLAIN
                child = self._measured_child(template, dial, mode)
                if child is not None:
                    self._aim = aim
                    return child
        dials = {d: p for d, p in self.targets.modes[mode].dials.items() if allowed is None or d in allowed}
        for _ in range(8):
            template, dial, _ = self.coverage.pick(mode, self.rng, dials, allowed=allowed)
            for parent in [*parents_for(self.lineages, template, self.config.max_depth, self.rng)[:4], None]:
                base = parent.spec if parent else Spec(parts=(template,), mode=mode, depth=0)
                child = descendant(
                    self.taxonomy,
                    base,
                    dial,
                    mode,
                    dials,
                    self.rng,
                    parent_id=parent.task.id if parent else None,
                    user_hint=parent.task.customer_user_id if parent else None,
                    max_parts=self.config.max_parts,
                )
                if child is not None:
                    self._aim = "coverage"
                    return child
        return None

    def _refused_twin(self, template: str, mode: str) -> str:
        """One of a write's refused twins, preferring those that exercise `mode` (the flaw check plants it)."""
        refusals = self.taxonomy.refusals(template)
        return self.rng.choice([n for n in refusals if mode in self.taxonomy[n].modes] or refusals)

    def _measured_child(self, template: str, dial: str, mode: str) -> Spec | None:
        """A task shaped like a measured failure cell: the atomic template with only that cell's dial on.

        No other dial is added and no customer is inherited, so the task stays the shape the agent failed in
        and new customers keep coming.
        """
        atomic = next((x for x in self.lineages if x.spec.parts == (template,) and x.spec.depth == 0), None)
        items = 1 if self.taxonomy[template].items else None
        base = Spec(parts=(template,), mode=mode, items=items, depth=1, parent=atomic.task.id if atomic else None)
        if dial == PLAIN:
            return base
        return apply_dial(self.taxonomy, base, dial, mode, self.rng, self.config.max_parts)

    def _try(self, spec: Spec | None, on_task: Callable[[Task], None] | None) -> None:
        if spec is None:
            return
        task_id = f"{self.world.name}-syn{self.config.seed}-g{self.generation}-{self._n:04d}-{spec.template}"
        self._n += 1
        dials = {"generation": self.generation, "aim": self._aim if self.generation else "atomic"}
        if self.partition is not None:
            dials["partition"] = self.partition.tag("train")
        cand = build(self.kit, self.ctx, spec, task_id, self.config.seed, provenance={"dials": dials})
        out = self.reworker.process(cand)
        self.outcomes.append(out)
        if out.status == "dropped":
            log.info("dropped %s after %s: %s", task_id, out.history, out.verification.details[:2])
            return
        task, traj = out.candidate.task, out.verification.trajectory
        assert task is not None and traj is not None  # a kept candidate has its task and the oracle's trajectory
        final = out.candidate.spec
        self.lineages.append(Lineage(final, task, self.generation))
        self.coverage.record(task)
        self.verifier.accept(task)
        self.result.tasks.append(task)
        self.result.trajectories.append(traj)
        if on_task:
            on_task(task)

    def manifest(self) -> dict:
        return synthesis_manifest(
            self.world.name, self.config.seed, self.config.dials, self.generation, self.targets, self.result.tasks,
            self.outcomes, self.reworker.stats, self.coverage.summary(), self.kit.items_argument,
        )  # fmt: skip


def synthesize(
    world: World,
    targets: Targets,
    out_dir: Path,
    config: SynthConfig | None = None,
    on_task: Callable[[Task], None] | None = None,
    targets_file: Path | None = None,
    refine: Callable[[SynthesisResult], SynthesisResult] | None = None,
    held_out: Path | None = None,
) -> SynthesisResult:
    """Run the synthesis and write tasks.jsonl, trajectories.jsonl, provenance.json and manifest.json to `out_dir`,
    whole or not at all (`pipeline.outputs.staged_folder`: a run killed while writing leaves the previous folder as
    it was). `targets_file`: the file `targets` were read from (named in messages; its digest recorded). Targets of
    another domain are refused (`check_targets`). `refine` runs on the result before it is written
    (`pipeline.synth.llm_roles.refine`: a model's verified output). No task may hold an evaluation customer: the
    world's evaluation partition, or the customers of the held-out tasks `held_out` (`pipeline.authoring.heldout`)."""
    kit = kit_of(world.domain, needed_for="synthesize")
    check_targets(world, targets, kit, str(targets_file or "targets"))
    if isinstance(kit, SelectionKit):  # tasks drawn from the domain's training pool, not grown from templates
        result = select(world, targets, config or SynthConfig(), kit, on_task)
    else:
        result = Synthesizer(world, targets, config).run(on_task)
    result = refine(result) if refine is not None else result
    guard = held([held_out], world)
    guard.check_tasks(result.tasks, str(out_dir / "tasks.jsonl"), domain_spec(world.domain))
    guard.check_trajectories(result.trajectories, {t.id: t for t in result.tasks}, str(out_dir / "trajectories.jsonl"))
    with staged_folder(out_dir) as staging:
        write_tasks(staging / "tasks.jsonl", result.tasks)
        with (staging / "trajectories.jsonl").open("w") as fh:
            for traj in result.trajectories:
                fh.write(traj.without_timings().model_dump_json() + "\n")  # a rerun writes the same bytes
        record = Provenance(
            domain=world.domain.name,
            world=world.name,
            world_digest=world.fingerprint,
            tasks_sha256=file_sha256(staging / "tasks.jsonl"),
            trajectories_sha256=file_sha256(staging / "trajectories.jsonl"),
            made_by="synthesize",
            sources={"targets": _targets_sha256(targets, targets_file)},
        )
        (staging / PROVENANCE_FILE).write_text(provenance_text(record))
        (staging / "manifest.json").write_text(json.dumps(result.manifest, indent=2, sort_keys=True) + "\n")
    return result


def check_targets(world: World, targets: Targets, kit, where: str = "targets") -> None:
    """Refuse targets made for another domain: by their record, and (a file without one) by cells naming templates
    the domain's taxonomy lacks, which the synthesis could otherwise only drop."""
    if targets.provenance is not None:
        check_record(targets.provenance, where, domain=world.domain.name)
        if targets.provenance.world == world.name and not needs_partition(world):
            raise EvalWorldError(
                f"{where}: measured in world {world.name!r}, the one asked to synthesize in: training data must be"
                " grounded in another generated world than the evaluation world"
            )
    if isinstance(kit, SelectionKit):
        return
    unknown = sorted({c for cells in targets.cells.values() for c in cells if c.split("/")[0] not in kit.taxonomy})
    if unknown:
        raise ProvenanceError(
            f"{where}: field cells: {len(unknown)} cell(s) of templates domain {domain_label(world.domain)!r} does"
            f" not have ({', '.join(unknown[:3])}{', ...' if len(unknown) > 3 else ''}): targets of another domain"
        )


def _targets_sha256(targets: Targets, targets_file: Path | None) -> str:
    """The digest of the targets file read (of the targets as `Targets.write` writes them, when not read)."""
    if targets_file is not None:
        return file_sha256(targets_file)
    return hashlib.sha256(targets.text().encode()).hexdigest()
