"""Train and evaluation apart, checked where training reads its inputs: no evaluation customer in any of them.

An evaluation customer is a (world name, customer id) pair: a customer of the evaluation partition of a world whose
customers are split between evaluation and training (`pipeline.authoring.partition.evaluation_customers`), or the
customer of a held-out task. Synthesis' output, the anchors, curation's pool and selection, SFT's data and GRPO's
tasks are checked as they are read; a task is checked by its customer, a trajectory by its task's customer and by
every customer its world log shows authenticated (the anchors have no task file). Where a world's customers are
split, a record an evaluation customer owns may not be named either (a request about another customer's record,
a gold or logged call's argument): its key is as much that customer as their id. A domain whose synthesis selects
from a pool splits tasks rather than customers: there no held-out task may train (by id), and customers are not
compared. The first offender raises `HeldOutCustomerError`, naming the file, the task, the world and the customer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.dataset import Task, read_tasks
from pipeline.errors import InputError

if TYPE_CHECKING:
    from pipeline.rollout import Trajectory
    from pipeline.world import World


class HeldOutCustomerError(InputError, ValueError):
    """A training input holds an evaluation customer (or a held-out task)."""


class HeldOut:
    """The evaluation customers and held-out task ids a training input may not hold.

    Built from the held-out task files (`read`); each world a checked input grounds in adds its evaluation partition
    (`add_world`, or loaded by name and domain when first met)."""

    def __init__(self, tasks: Iterable[tuple[Task, str]] = ()) -> None:
        self.customers: dict[tuple[str, str], str] = {}  # (world, customer) → why it is held out
        self.task_ids: dict[str, str] = {}  # held-out task id → the file holding it
        self._split: dict[str, bool] = {}  # world name → whether its customers (not only its tasks) are split
        self._added: set[str] = set()  # worlds whose evaluation partition is in `customers`
        self._tried: set[tuple[str, str | None]] = set()  # (world, domain) loads tried
        self._owned: dict[str, dict[str, tuple[str, str]]] = {}  # world → record key → (table, evaluation owner)
        for task, where in tasks:
            self.task_ids.setdefault(task.id, where)
            if task.customer_user_id:
                self.customers.setdefault((task.world, task.customer_user_id), f"held-out task {task.id} of {where}")

    @classmethod
    def read(cls, files: Iterable[Path | str | None]) -> HeldOut:
        """The held-out tasks of `files` (None skipped)."""
        return cls((task, str(path)) for path in files if path is not None for task in read_tasks(Path(path)))

    def add_world(self, world: World) -> HeldOut:
        """Add the world's evaluation partition (where its customers are split)."""
        from pipeline.authoring.partition import evaluation_customers

        if world.name not in self._added:
            self._added.add(world.name)
            self._split[world.name] = not _selects(world.domain)
            why = f"the evaluation partition of world {world.name!r}"
            evaluation = evaluation_customers(world)
            for customer in sorted(evaluation):
                self.customers.setdefault((world.name, customer), why)
            owned = self._owned.setdefault(world.name, {})
            for table in world.table_names if evaluation else ():
                for key, record in world.table(table).items():
                    owner = world.domain.owner(table, record)
                    if owner in evaluation:
                        owned.setdefault(str(key), (table, owner))
        return self

    def check_tasks(self, tasks: Iterable[Task], where: str, domain: str | None = None) -> None:
        """Refuse a held-out task or a task about an evaluation customer; `domain` loads a world first met."""
        for task in tasks:
            named = [r.record_id or r.order_id for r in task.user_script.requests]
            named += [v for action in task.gold_actions for v in _strings(action.arguments)]
            self._check(where, task.id, task.world, [task.customer_user_id], domain, named)

    def check_trajectories(self, trajectories: Iterable[Trajectory], tasks: Mapping[str, Task], where: str) -> None:
        """Refuse a trajectory of a held-out task, or whose task's or authenticated customer is an evaluation one."""
        for traj in trajectories:
            task = tasks.get(traj.task_id)
            customers = [task.customer_user_id if task is not None else None]
            events = [e for e in traj.world_log if isinstance(e, dict)]
            customers += [e.get("authenticated_user_id") for e in events]
            named = [v for e in events for v in _strings(e.get("arguments"))]
            self._check(where, traj.task_id, traj.world, customers, traj.domain, named)

    def _check(
        self, where: str, task_id: str, world: str, customers: list[str | None], domain: str | None, named: list
    ) -> None:
        if task_id in self.task_ids:
            raise HeldOutCustomerError(
                f"{where}: task {task_id!r} is a held-out task ({self.task_ids[task_id]}); training data must not"
                " hold one"
            )
        if not self._customers_split(world, domain):
            return
        for customer in dict.fromkeys(c for c in customers if c):
            why = self.customers.get((world, customer))
            if why is not None:
                raise HeldOutCustomerError(
                    f"{where}: task {task_id!r} in world {world!r} is about customer {customer!r}, an evaluation"
                    f" customer ({why}); training data must not hold one"
                )
        owned = self._owned.get(world, {})
        for value in dict.fromkeys(v for v in named if v):
            if value in owned:
                table, owner = owned[value]
                raise HeldOutCustomerError(
                    f"{where}: task {task_id!r} in world {world!r} names {table} record {value!r} of customer"
                    f" {owner!r}, an evaluation customer ({self.customers[(world, owner)]}); training data must not"
                    " hold one"
                )

    def _customers_split(self, world: str, domain: str | None) -> bool:
        """Whether customers are compared in `world`: loaded once by name (and domain) to add its partition; a
        world that does not load by its name (a directory recorded by name) is compared against what is known."""
        from pipeline.world import WorldLoadError, load_world, resolve_domain

        if world not in self._added and (world, domain) not in self._tried:
            self._tried.add((world, domain))
            with suppress(WorldLoadError, InputError, FileNotFoundError, ValueError):
                self.add_world(load_world(world, domain))
        if world in self._split:
            return self._split[world]
        try:
            return domain is None or not _selects(resolve_domain(domain))
        except InputError:  # an unknown domain: compare customers
            return True


def _strings(value: object) -> list[str]:
    """Every string in a call's arguments (nested lists and objects included)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _selects(domain) -> bool:
    """A domain whose synthesis selects from a pool split by task (telecom's scenarios), not by customer."""
    from pipeline.authoring.selection_kit import SelectionKit

    return isinstance(domain.capability("synthesis"), SelectionKit)


def held_out(files: Iterable[Path | str | None], *worlds: World) -> HeldOut:
    """`HeldOut.read(files)` with `worlds`' evaluation partitions added."""
    out = HeldOut.read(files)
    for world in worlds:
        out.add_world(world)
    return out
