"""Train and evaluation apart without a world generator: one world's customers in two disjoint partitions.

A domain with a generator grounds training tasks in generated worlds only (`gen-<seed>`). A domain without one
has a single world; its customers (the records of the table each of whose records its own key owns, by
`Domain.owner`) are split by a seeded hash into an evaluation partition, in which held-out tasks are grounded,
and a training partition, in which synthesis and the anchors ground. The partition is the world's, one split for
every use (`PARTITION_SEED`): no setting can move a customer from one side to the other between held-out
generation and synthesis. It is recorded with every task (`provenance.dials['partition']`, e.g. 'eval:0' — the
side and the seed), and grounding a training task in an evaluation customer is refused; synthesis from a domain
with a generator is refused any world but a generated one (`ensure_generated`). A domain whose synthesis selects
from a pool (`pipeline.authoring.selection_kit`) splits tasks, not customers (`splits_customers`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from pipeline.errors import InputError
from pipeline.world import World

EVAL_SHARE = 0.5
"""The share of customers held out for evaluation."""
PARTITION_SEED = 0
"""The seed of every world's split: one evaluation side, whoever asks."""


class EvalCustomerError(InputError, ValueError):
    """Training data asked to be grounded in a customer of the evaluation partition."""


GENERATED = re.compile(r"^gen-\d+(-\d+x\d+x\d+)?$")


class EvalWorldError(InputError, ValueError):
    """Synthesis asked to ground tasks in a world that is not a generated one (e.g. the τ² evaluation world)."""


def ensure_generated(world: World) -> None:
    """A domain with a generator trains only on generated worlds; one without splits its world's customers
    (`pipeline.authoring.partition`) and synthesis grounds in the training partition."""
    if needs_partition(world):
        return
    if not GENERATED.match(world.name) or "tau2" in world.name.lower():
        raise EvalWorldError(
            f"refusing to synthesize from world {world.name!r}: training data must be grounded in a generated "
            "world (gen-<seed>), never the evaluation world"
        )


@dataclass(frozen=True)
class Partition:
    seed: int
    eval: frozenset[str]
    train: frozenset[str]

    def side(self, user_id: str) -> str:
        return "eval" if user_id in self.eval else "train"

    def tag(self, side: str) -> str:
        return f"{side}:{self.seed}"


def customer_table(world: World) -> str | None:
    """The table whose every record is owned by the customer it is keyed by."""
    for name in world.table_names:
        records = world.table(name)
        if records and all(world.domain.owner(name, r) == k for k, r in records.items()):
            return name
    return None


def partition(world: World, seed: int = PARTITION_SEED, eval_share: float = EVAL_SHARE) -> Partition:
    """The world's customers split by a hash of (seed, user id): stable when customers are added or removed."""
    table = customer_table(world)
    if table is None:
        raise InputError(f"world {world.name!r}: no table of customers (records owned by their own key) to partition")
    ids = sorted(world.table(table))
    held = {u for u in ids if _unit(f"partition:{seed}:{u}") < eval_share}
    if ids and not held:
        held = {ids[0]}
    if len(held) == len(ids) and len(ids) > 1:
        held.discard(ids[-1])
    return Partition(seed, frozenset(held), frozenset(ids) - held)


def _unit(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def needs_partition(world: World) -> bool:
    """A world whose domain has no generator serves evaluation and training from one world."""
    return not world.domain.provides("generator")


def splits_customers(world: World) -> bool:
    """Whether the world's customers are split between evaluation and training: one world serving both, grown
    into tasks from templates (a selection kit's pool is split by task, `SelectionKit.pool`)."""
    from pipeline.authoring.selection_kit import SelectionKit

    return needs_partition(world) and not isinstance(world.domain.capability("synthesis"), SelectionKit)


def evaluation_customers(world: World) -> frozenset[str]:
    """The customers of `world` no training input may hold: its evaluation partition, where its customers are
    split (`splits_customers`); none otherwise (a generated world serves training only)."""
    if not splits_customers(world) or customer_table(world) is None:
        return frozenset()
    return partition(world).eval


class Partitioned:
    """A grounding (`pipeline.authoring.kit.Grounding`) restricted to one partition's customers; asking for a customer
    of the other partition is refused."""

    def __init__(self, inner: Any, part: Partition, side: str) -> None:
        self._inner, self.partition, self.side = inner, part, side
        allowed = part.eval if side == "eval" else part.train
        self._allowed = allowed
        self.customers = [u for u in inner.customers if u in allowed]

    def customer(self, user_id: str) -> Any:
        if user_id not in self._allowed:
            other = "evaluation" if self.side == "train" else "training"
            raise EvalCustomerError(
                f"customer {user_id!r} is in the {other} partition ({self.partition.tag('eval')}); "
                f"{'training' if self.side == 'train' else 'evaluation'} tasks are grounded only in its own customers"
            )
        return self._inner.customer(user_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
