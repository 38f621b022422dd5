"""Task synthesis: templates grounded in a world's data, verified by replaying their gold actions."""

from pipeline.synth.templates import (
    ALL_TEMPLATES,
    DEFAULT_CYCLE,
    TEMPLATES,
    GenerationResult,
    generate,
    generate_tasks,
)

__all__ = ["ALL_TEMPLATES", "DEFAULT_CYCLE", "TEMPLATES", "GenerationResult", "generate", "generate_tasks"]
