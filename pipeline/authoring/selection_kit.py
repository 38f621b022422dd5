"""What a domain provides to be synthesized by selection (`pipeline.synth.select`): a training-task pool and the
cells each task covers. Light on purpose: the kit checks and the failure cells read it without loading the
runner and grader that selection itself needs."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from pipeline.grading.modes import FAILURE_MODES

if TYPE_CHECKING:
    from pipeline.dataset import Task
    from pipeline.world import World

MODES = FAILURE_MODES


class SelectionKit(ABC):
    """A domain's training-task pool and the cells each of its tasks covers."""

    business: str = "a customer-service desk"

    @abstractmethod
    def pool(self, world: World) -> list[Task]:
        """Every task training may use, grounded in `world`, none sharing a scenario with a held-out task."""

    @abstractmethod
    def cells(self, task: Task) -> list[str]:
        """The cells ("template/dial/outcome") a task covers, for any task of the domain (held-out ones too)."""

    def modes(self, task: Task) -> tuple[str, ...]:
        """The failure modes a task exercises (every mode of the registry by default)."""
        return MODES


def cells_by_mode(kit: SelectionKit, task: Task) -> dict[str, list[str]]:
    cells = sorted(set(kit.cells(task)))
    return {mode: cells for mode in kit.modes(task)} if cells else {}
