"""Targeted synthesis: tasks aimed at the cells targeting chose, evolved under coverage, verified by the world,
reworked where they fail, and returned with gold trajectories. The building blocks (kits, drafts, templates,
the world's partition) are `pipeline.authoring`'s."""

from pipeline.synth.config import SynthConfig
from pipeline.synth.llm_roles import refine
from pipeline.synth.plain import generate_selected
from pipeline.synth.select import anchor_trajectories
from pipeline.synth.synthesize import synthesize
from pipeline.synth.verify import VerifyConfig

__all__ = ["SynthConfig", "VerifyConfig", "anchor_trajectories", "generate_selected", "refine", "synthesize"]
