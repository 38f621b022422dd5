"""Task synthesis grounded in a generated world and verified by it.

atomic / taxonomy    the templates: every write and every refusal, tagged with the failure modes they exercise
templates            plain generation (`generate_tasks`, `generate`) used for held-out task sets
synthesize           targeted synthesis: evolution steered by coverage, verification, rework, gold trajectories
"""

from pipeline.synth.templates import (
    ALL_TEMPLATES,
    DEFAULT_CYCLE,
    TEMPLATES,
    GenerationResult,
    generate,
    generate_tasks,
)

__all__ = ["ALL_TEMPLATES", "DEFAULT_CYCLE", "TEMPLATES", "GenerationResult", "generate", "generate_tasks"]
