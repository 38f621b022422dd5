"""Telecom's held-out and training tasks: τ²-bench's own, split so that no training task shares a scenario with a
held-out one.

Telecom's worlds are τ²-bench's (the carrier database and the phone state of a data directory); what differs from
task to task is the set-up that breaks the customer's phone or line. So the split is over tasks, not worlds:

- held out: the test split of the base set (`split_tasks.json` "test", 40 tasks of `tasks.json`);
- training pool: the base set's train split (74) and every task of the full set (`tasks_full.json`, 2,285) whose
  scenario — its id less the persona, `[issue]fault|fault…` — is no held-out task's scenario.

A task's id names its issue and the faults its set-up plants, so the pool's tasks are aimed at failure-mode cells
by id (`pipeline.domains.telecom.synthesis`).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from pipeline.dataset import Task
from pipeline.errors import TaskError
from pipeline.world import World, WorldLoadError

SPLIT_FILE = "split_tasks.json"
_ID = re.compile(r"^\[(?P<issue>[^\]]+)\](?P<faults>[^\[]*)(?:\[PERSONA:(?P<persona>[^\]]*)\])?$")


def parse_id(task_id: str) -> tuple[str, tuple[str, ...], str | None]:
    """(issue, faults, persona) of a τ²-bench telecom task id such as `[mms_issue]airplane_mode_on|…[PERSONA:Easy]`."""
    m = _ID.match(task_id)
    if m is None:
        raise TaskError(f"task id {task_id!r} is not of the form [issue]fault|fault…[PERSONA:name]")
    faults = tuple(f for f in m.group("faults").split("|") if f)
    return m.group("issue"), faults, m.group("persona")


def scenario(task_id: str) -> str:
    """The task's scenario: its issue and faults, without the persona."""
    issue, faults, _ = parse_id(task_id)
    return f"[{issue}]{'|'.join(faults)}"


def directory(world: World) -> Path:
    """The τ²-bench data directory a telecom world was loaded from (its tasks files lie beside its db.json)."""
    path = getattr(world, "directory", None)
    if path is None:
        raise WorldLoadError(
            f"telecom world {world.name!r} was not loaded from a τ²-bench data directory: its tasks come from the"
            f" directory's {SPLIT_FILE}, tasks.json and tasks_full.json"
        )
    return Path(path)


@cache
def _load(path: Path, tasks_file: str) -> tuple[Task, ...]:
    from pipeline.domains.telecom.tau2 import Tau2Telecom
    from pipeline.world import resolve_domain

    return tuple(Tau2Telecom(resolve_domain("telecom")).load(path, tasks_file)[1])


def _split(path: Path) -> dict[str, list[str]]:
    file = path / SPLIT_FILE
    try:
        split = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WorldLoadError(f"{file}: file not found") from None
    except json.JSONDecodeError as exc:
        raise WorldLoadError(f"{file}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    for key in ("train", "test"):
        if not isinstance(split.get(key), list):
            raise WorldLoadError(f"{file}: field {key}: expected a list of task ids")
    return split


def held_out(world: World) -> list[Task]:
    """The test split of the base set, in tasks.json order."""
    path = directory(world)
    test = set(_split(path)["test"])
    tasks = [t for t in _load(path, "tasks.json") if t.id in test]
    missing = test - {t.id for t in tasks}
    if missing:
        raise WorldLoadError(f"{path / SPLIT_FILE}: field test: ids not in tasks.json: {sorted(missing)[:3]}")
    return [t.model_copy(update={"world": world.name}) for t in tasks]


def training_pool(world: World) -> list[Task]:
    """The base train split, then the full set's tasks that share no scenario with a held-out task; by id once."""
    path = directory(world)
    split = _split(path)
    test_ids = set(split["test"])
    test_scenarios = {scenario(i) for i in test_ids}
    train = set(split["train"])
    pool, seen = [], set()
    base = [t for t in _load(path, "tasks.json") if t.id in train]
    full = list(_load(path, "tasks_full.json")) if (path / "tasks_full.json").exists() else []
    for task in [*base, *full]:
        if task.id in seen or task.id in test_ids or scenario(task.id) in test_scenarios:
            continue
        seen.add(task.id)
        pool.append(task.model_copy(update={"world": world.name}))
    return pool


def generate_tasks(world: World, n: int, seed: int = 0) -> list[Task]:
    """The held-out tasks (the `tasks` capability): the first `n` of the test split in file order, all 40 when
    `n` is 40 or more. `seed` is accepted for the capability's signature; the split is τ²-bench's, not drawn."""
    del seed
    return held_out(world)[: max(n, 0)]
