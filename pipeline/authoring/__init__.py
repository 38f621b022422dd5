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

from pipeline.authoring.assemble import assemble, gold_problems
from pipeline.authoring.coverage import CoverageTracker, task_cells
from pipeline.authoring.drafts import Draft, Want, act
from pipeline.authoring.heldout import HeldOut, held_out
from pipeline.authoring.kit import Grounding, SynthesisKit, SynthesisKitError, authenticate, kit_of, template_kit_of
from pipeline.authoring.partition import EvalWorldError, Partitioned, ensure_generated, needs_partition, partition
from pipeline.authoring.selection_kit import SelectionKit, cells_by_mode
from pipeline.authoring.taxonomy import DIALS, MESS_DIALS, PLAIN, Taxonomy, TemplateSpec
from pipeline.authoring.templates import (
    DEFAULT_CYCLE,
    EVERY,
    PAIR,
    GenerationResult,
    expand_cycle,
    generate,
    generate_tasks,
)

__all__ = [
    "CoverageTracker",
    "DEFAULT_CYCLE",
    "DIALS",
    "Draft",
    "EVERY",
    "EvalWorldError",
    "GenerationResult",
    "Grounding",
    "HeldOut",
    "MESS_DIALS",
    "PAIR",
    "PLAIN",
    "Partitioned",
    "SelectionKit",
    "SynthesisKit",
    "SynthesisKitError",
    "Taxonomy",
    "TemplateSpec",
    "Want",
    "act",
    "assemble",
    "authenticate",
    "cells_by_mode",
    "ensure_generated",
    "expand_cycle",
    "generate",
    "generate_tasks",
    "gold_problems",
    "held_out",
    "kit_of",
    "needs_partition",
    "partition",
    "task_cells",
    "template_kit_of",
]
