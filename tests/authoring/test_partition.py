"""A domain without a world generator: one world's customers split into evaluation and training partitions."""

from __future__ import annotations

import pytest

from pipeline.authoring.partition import EvalCustomerError, Partitioned, partition
from pipeline.authoring.templates import generate_tasks
from pipeline.synth.config import SynthConfig
from pipeline.synth.synthesize import Synthesizer
from pipeline.target import Targets, split_budget
from pipeline.world.registry import load_world
from pipeline.world.tables import World
from tests.domains.toy.domain import StudioDomain, generate
from tests.domains.toy.synthesis import KIT


class OneWorldStudio(StudioDomain):
    """The studio with a single world ('studio') and no generator."""

    name = "studio-one-world"

    def load(self, ref: str) -> World | None:
        if ref != "studio":
            return None
        base = generate(5, members=40)
        return World({t: base.table(t) for t in base.table_names}, base.policy, "studio", self)

    def generator(self):
        return None


ONE_WORLD = OneWorldStudio()
SPEC = "tests.authoring.test_partition:ONE_WORLD"


def _world() -> World:
    return load_world("studio", SPEC)


def test_customers_split_disjoint_and_seeded():
    world = _world()
    a, b, c = partition(world, 0), partition(world, 0), partition(world, 1)
    assert a == b and a != c
    assert a.eval and a.train and not a.eval & a.train
    assert a.eval | a.train == set(world.table("users"))


def test_eval_tasks_and_synthesis_ground_in_their_own_partition():
    world = _world()
    part = partition(world, 0)
    held_out = generate_tasks(world, 10, seed=0)
    assert held_out and {t.customer_user_id for t in held_out} <= part.eval
    assert {t.provenance.dials["partition"] for t in held_out} == {"eval:0"}

    targets = Targets(budget=6, modes=split_budget({"plan_adherence": 1.0, "misread": 1.0}, 6))
    synth = Synthesizer(world, targets, SynthConfig(max_generations=1))  # no gen-<seed> world needed
    tasks = synth.run().tasks
    assert tasks and {t.customer_user_id for t in tasks} <= part.train
    assert {t.provenance.dials["partition"] for t in tasks} == {"train:0"}


def test_grounding_in_an_evaluation_customer_is_refused():
    world = _world()
    part = partition(world, 0)
    ctx = Partitioned(KIT.ground(world), part, "train")
    with pytest.raises(EvalCustomerError, match="evaluation partition"):
        ctx.customer(sorted(part.eval)[0])
    assert ctx.customer(sorted(part.train)[0]).user_id in part.train
