"""Task synthesis for any domain, grounded in a generated world and verified by it.

kit                  what a domain provides (`Domain.synthesis()`): atomic templates, their taxonomy, wording
taxonomy             template specs, the difficulty dials and the coverage cells
templates            plain generation (`generate_tasks`, `generate`) used for held-out task sets
synthesize           targeted synthesis: evolution steered by coverage, verification, rework, gold trajectories
"""

from pipeline.synth.kit import SynthesisKit, SynthesisKitError, kit_of
from pipeline.synth.templates import DEFAULT_CYCLE, EVERY, PAIR, GenerationResult, generate, generate_tasks

__all__ = [
    "DEFAULT_CYCLE",
    "EVERY",
    "PAIR",
    "GenerationResult",
    "SynthesisKit",
    "SynthesisKitError",
    "generate",
    "generate_tasks",
    "kit_of",
]
