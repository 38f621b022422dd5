"""One targeted synthesis run on the small generated world, shared by the synthesis tests."""

from __future__ import annotations

from functools import lru_cache

from pipeline.synth.config import SynthConfig
from pipeline.synth.synthesize import SynthesisResult, Synthesizer
from pipeline.target import Targets, split_budget
from tests.agents.scripted_helpers import small_world

BUDGET = 48
RATES = {"plan_adherence": 0.2, "invention": 0.1, "misread": 0.3}


def targets(budget: int = BUDGET) -> Targets:
    return Targets(budget=budget, modes=split_budget(RATES, budget, pass_at_1=0.5))


@lru_cache(maxsize=1)
def synthesized() -> SynthesisResult:
    return Synthesizer(small_world(), targets(), SynthConfig(seed=0)).run()
