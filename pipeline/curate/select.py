"""Selection: deduplicate, place each probed task in a difficulty band, and mix anchors with targets.

An anchor is a task the current agent mostly passes (posterior mean ≥ ½), a target one it mostly fails.
The mix keeps `anchor_ratio` of anchors in the selection, as large as the kept tasks allow (when one side is
empty the ratio cannot be met and the other side is taken whole; the manifest shows the share reached);
within each side the tasks with the most posterior mass in the kept bands go first, and among equal masses
(with one probe every failed task has the same posterior) the templates take turns, so a capped selection
covers every kind of task the agent fails instead of the first ones by id.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.curate.bands import Bands
from pipeline.dataset import Task
from pipeline.digest import sha256_json
from pipeline.rollout import Trajectory


def trajectory_key(traj: Trajectory) -> str:
    """Content of a conversation (who said what, which calls) regardless of ids, timings and trial."""
    body = [(m.role, m.content, [(c.name, c.arguments) for c in m.tool_calls]) for m in traj.messages]
    return sha256_json([traj.task_id, body], compact=False, ensure_ascii=True, default=str)


def task_key(task: Task) -> str:
    """Content of a task regardless of its id: what the customer says and what the gold actions do."""
    data = {
        "world": task.world,
        "user": task.customer_user_id,
        "script": task.user_script.model_dump(mode="json"),
        "gold": [a.model_dump(mode="json") for a in task.gold_actions],
    }
    return sha256_json(data, compact=False, ensure_ascii=True)


@dataclass
class Probed:
    task: Task
    trajectory: Trajectory  # the verified passing pool trajectory it is taught with
    n: int
    passes: int
    masses: list[float]
    band: int

    @property
    def mean(self) -> float:
        return (self.passes + 0.5) / (self.n + 1.0)

    @property
    def role(self) -> str:
        return "anchor" if self.mean >= 0.5 else "target"

    def kept_mass(self, bands: Bands) -> float:
        return sum(self.masses[1:-1])


def mix(probed: list[Probed], bands: Bands, anchor_ratio: float, max_items: int | None = None) -> list[Probed]:
    """The kept tasks, anchors and targets at `anchor_ratio` (as close as whole numbers allow)."""
    kept = [p for p in probed if bands.keep(p.passes, p.n)]
    anchors = _by_mass_then_templates_in_turn([p for p in kept if p.role == "anchor"], bands)
    targets = _by_mass_then_templates_in_turn([p for p in kept if p.role == "target"], bands)
    if anchor_ratio <= 0.0:
        total = len(targets)
    elif anchor_ratio >= 1.0:
        total = len(anchors)
    else:
        total = int(min(len(anchors) / anchor_ratio, len(targets) / (1.0 - anchor_ratio)) + 1e-9)
    if total == 0 and kept:  # one side is empty: the ratio cannot be met, so take the side there is
        return (anchors or targets)[:max_items]
    if max_items is not None:
        total = min(total, max_items)
    n_anchors = min(len(anchors), round(total * anchor_ratio))
    n_targets = min(len(targets), total - n_anchors)
    return anchors[:n_anchors] + targets[:n_targets]


def _by_mass_then_templates_in_turn(side: list[Probed], bands: Bands) -> list[Probed]:
    """Most kept mass first; within one mass (rounded), each template's next task in turn (by task id)."""
    turn: dict[tuple[float, str], int] = {}
    keyed = []
    for p in sorted(side, key=lambda p: p.task.id):
        mass = round(p.kept_mass(bands), 9)
        template = p.task.provenance.template or ""
        k = turn.get((mass, template), 0)
        turn[(mass, template)] = k + 1
        keyed.append(((-mass, k, template, p.task.id), p))
    return [p for _, p in sorted(keyed, key=lambda kp: kp[0])]
