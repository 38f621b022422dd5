"""Telecom's synthesis capability: a selection kit over τ²-bench's own tasks (`pipeline.synth.select`).

A telecom task is a phone or line broken in named ways (airplane mode on, the SIM unseated, the APN's MMS setting
broken…) that the customer reports as one issue (no service, no mobile data, no MMS). Growing such tasks would
mean writing a new set-up and new gold for both sides; τ²-bench's full set already holds 2,285 of them, each with
its set-up, gold and env assertions. So telecom's training tasks are selected from the pool that shares no
scenario with a held-out task (`pipeline.domains.telecom.tasks.training_pool`), aimed at the cells where the
measurement saw each failure mode: a cell is an issue and one fault its set-up plants (`mms_issue/unseat_sim_card
/done`), so a failure on a task with three faults weighs on three cells, and the selection draws the pool's
tasks that hold those faults under that issue.
"""

from __future__ import annotations

from pipeline.authoring import SelectionKit
from pipeline.dataset import Task
from pipeline.domains.telecom.tasks import parse_id, training_pool
from pipeline.errors import TaskError
from pipeline.world import World


class TelecomKit(SelectionKit):
    business = "a mobile carrier"

    def pool(self, world: World) -> list[Task]:
        return training_pool(world)

    def cells(self, task: Task) -> list[str]:
        """`issue/fault/done` per fault the task's set-up plants (`issue/none/done` for a task that plants none);
        none for a task whose id is not τ²-bench's form."""
        try:
            issue, faults, _ = parse_id(task.id)
        except TaskError:
            return []
        return [f"{issue}/{fault}/done" for fault in faults or ("none",)]


TELECOM_KIT = TelecomKit()
