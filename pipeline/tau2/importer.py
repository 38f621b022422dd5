"""τ²-bench tasks as a task file: a domain directory's tasks (or one split of them) as our Task records.

The conversion is the domain's own (`Domain.tau2_importer`): it keeps the user scenario as written (persona,
reason for call, known / unknown info, task instructions), every gold action with its requestor and compared
arguments, `communicate_info`, `nl_assertions`, `reward_basis` and `initial_state`. No end state is stored:
the grader replays the gold actions. The import replays them once anyway, so that a task whose gold calls our
tools refuse is reported at import time instead of failing every trial later (a look-up that finds nothing
is part of some tasks — the customer gives a wrong email first — and is not reported).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.dataset import Task, replay_gold, write_tasks
from pipeline.grading import check_tasks
from pipeline.world import World, WorldLoadError

log = logging.getLogger(__name__)
SPLITS_FILE = "split_tasks.json"


@dataclass
class Imported:
    """What an import produced: the world the tasks run in, the tasks, and the tasks with refused gold writes."""

    world: World
    tasks: list[Task]
    split: str | None
    refused: dict[str, list[str]] = field(default_factory=dict)


def read_splits(path: Path) -> dict[str, list[str]]:
    """The domain's named splits (split_tasks.json: split name → task ids); {} when the file is absent."""
    file = path / SPLITS_FILE
    if not file.exists():
        return {}
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise WorldLoadError(f"{file}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise WorldLoadError(f"{file}: expected an object of split name → list of task ids")
    for name, ids in data.items():
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise WorldLoadError(f"{file}: field {name}: expected a list of task ids")
    return data


def select_split(tasks: list[Task], splits: dict[str, list[str]], split: str | None, where: Path) -> list[Task]:
    """The tasks of `split`, in task-file order; every task when `split` is None."""
    if split is None:
        return tasks
    if split not in splits:
        known = ", ".join(sorted(splits)) or "none"
        raise WorldLoadError(f"{where / SPLITS_FILE}: no split {split!r} (splits: {known})")
    wanted = set(splits[split])
    unknown = sorted(wanted - {t.id for t in tasks})
    if unknown:
        raise WorldLoadError(f"{where / SPLITS_FILE}: field {split}: unknown task ids {unknown[:5]}")
    return [t for t in tasks if t.id in wanted]


def import_tau2(path: str | Path, split: str | None = None, domain: str | None = None) -> Imported:
    """Load a τ²-bench domain directory through its domain's importer and keep the tasks of `split`."""
    from pipeline.world import checked_world, domain_of_directory, resolve_domain

    path = Path(path)
    if not path.is_dir():
        raise WorldLoadError(f"{path}: not a domain directory")
    d = resolve_domain(domain) if domain else domain_of_directory(path)
    importer = d.require("tau2_importer", needed_for="agentloop tasks import-tau2")
    world, tasks = importer.load(path)
    checked_world(world, path)
    chosen = select_split(tasks, read_splits(path), split, path)
    # a task no run can score (an unknown gold tool, a check its own gold fails) is refused, not written
    check_tasks(world, chosen, str(path / "tasks.json"))
    refused = {}
    for task in chosen:
        failed = [e.name for e in replay_gold(world, task).log if not e.ok and e.kind == "write"]
        if failed:
            log.warning("task %s: gold writes refused on replay: %s", task.id, failed)
            refused[task.id] = failed
    return Imported(world=world, tasks=chosen, split=split, refused=refused)


def write_import(path: str | Path, out: str | Path, split: str | None = None, domain: str | None = None) -> Imported:
    """Import and write the task file atomically."""
    imported = import_tau2(path, split, domain)
    write_tasks(out, imported.tasks)
    return imported
