"""How tasks are written for a domain: what its kit provides, the drafts its templates return, and the world's
split into a training and an evaluation side.

kit                  what a domain provides (`Domain.synthesis()`): atomic templates, their taxonomy, wording
drafts               what an atomic template returns: one request of one customer, with the actions that serve it
taxonomy             template specs, the difficulty dials and the coverage cells
assemble, topup      drafts into tasks: gold replayed, messes added, cells filled up
templates            plain generation (`generate_tasks`, `generate`) used for held-out task sets
coverage             which cells a task set covers
partition            a world's customers split into a training and an evaluation side
heldout              the check that no evaluation customer reaches training
selection_kit        a domain's selection of what targeting and synthesis aim at
"""

from pipeline.authoring.kit import SynthesisKit, SynthesisKitError, kit_of
from pipeline.authoring.templates import DEFAULT_CYCLE, EVERY, PAIR, GenerationResult, generate, generate_tasks

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
