"""Where the measured failures happened: each mode's failed trials spread over the coverage cells of their tasks.

A mode's rate says how much to synthesize for it; its cells say what to synthesize. A cell is a template,
a dial and an outcome (`pipeline.authoring.coverage`, in the taxonomy of the domain's synthesis kit), so the
synthesizer can aim new tasks, on its own generated world, at the shapes the agent failed in: a plain write it
keeps getting wrong, a forgotten email, a refusal after pushback. Only shapes cross over, never the held-out
tasks' entities. A domain without a synthesis kit has no cells.

Each failed trial adds weight 1 to its task's cells of every mode the analyzer named (split evenly across
those cells); a failed trial the analyzer named no mode for adds 1 split across the modes the task's cells
are tagged with. Weights are normalised to shares per mode.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from pipeline.authoring import SelectionKit, SynthesisKit, cells_by_mode, kit_of, task_cells
from pipeline.dataset import Task, read_tasks
from pipeline.errors import InputError
from pipeline.world import Domain, resolve_domain


class VerdictsReadError(InputError, ValueError):
    """A verdicts file that cannot be read, or names a task the tasks file lacks; the message names both."""


def _cells_by_mode(kit: SynthesisKit | SelectionKit, task: Task) -> dict[str, list[str]]:
    if isinstance(kit, SelectionKit):
        return cells_by_mode(kit, task)
    out: dict[str, list[str]] = defaultdict(list)
    for cell in sorted(task_cells(kit, task)):
        for mode in kit.taxonomy[cell[0]].modes:
            out[mode].append("/".join(cell))
    return out


def _run_domain(verdicts: Path) -> str:
    """The domain a measure run's trajectories record (the trajectories.jsonl beside its verdicts)."""
    path = Path(verdicts).parent / "trajectories.jsonl"
    found = recorded_domain(path.parent)
    if found is None:
        raise VerdictsReadError(
            f"{verdicts}: failure cells need the tasks' domain: name it, or keep the run's trajectories beside it"
            f" ({path} records none)"
        )
    return found


def recorded_domain(run_dir: Path) -> str | None:
    """The domain a run folder's trajectories record (None when it has none to read)."""
    try:
        with (Path(run_dir) / "trajectories.jsonl").open(encoding="utf-8") as fh:
            return str(json.loads(fh.readline())["domain"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def failure_cells(
    verdicts: Path, tasks: Path, domain: str | Domain | None = None, targeted: tuple[str, ...] | None = None
) -> dict[str, dict[str, float]]:
    """Mode → cell ("template/dial/outcome") → share of that mode's measured failure weight; with `targeted`, only
    those modes are read, so a mode left out of the split moves no other mode's shares.

    `domain` (a name, `module:attribute`, or a Domain) is the one the tasks belong to; None: the domain the run's
    trajectories (beside `verdicts`) record. Without a synthesis kit it has no cells, and the result is empty."""
    by_id = {t.id: t for t in read_tasks(tasks)}
    d = resolve_domain(domain or _run_domain(verdicts)) if not isinstance(domain, Domain) else domain
    if not d.provides("synthesis"):
        return {}
    kit = kit_of(d, needed_for="failure cells")
    weight: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    try:
        lines = Path(verdicts).read_text().splitlines()
    except OSError as exc:
        raise VerdictsReadError(f"{verdicts}: {exc}") from None
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            verdict = row["verdict"]
            task_id, passed = verdict["task_id"], verdict["passed"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise VerdictsReadError(f"{verdicts}:{lineno}: not a verdict row ({exc})") from None
        if passed:
            continue
        task = by_id.get(task_id)
        if task is None:
            raise VerdictsReadError(f"{verdicts}:{lineno}: task {task_id!r} is not in {tasks}")
        cells = {m: c for m, c in _cells_by_mode(kit, task).items() if targeted is None or m in targeted}
        if not cells:
            continue
        named = [m for m in (row.get("analysis") or {}).get("modes", []) if m in cells]
        modes = named or list(cells)
        for mode in modes:
            share = (1.0 if named else 1.0 / len(modes)) / len(cells[mode])
            for cell in cells[mode]:
                weight[mode][cell] += share
    out = {}
    for mode, weights in sorted(weight.items()):
        total = sum(weights.values())
        out[mode] = {c: round(w / total, 6) for c, w in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))}
    return out
