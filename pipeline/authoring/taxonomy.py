"""The template taxonomy: what each atomic template writes or refuses, and which failure modes it exercises.

A domain's synthesis kit declares one `TemplateSpec` per atomic template: every write of the domain has a
template that carries it out, and every refusal its policy requires has one whose right answer is "no". A
template's failure-mode tags say which mistakes a task built on it can catch: a status read can be misread, a
written value can be invented, a confirmed write can be skipped. The dials and cells are the same for every
domain.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

# Difficulty dials a task can turn on. Messes change how the customer talks; the rest change the task's shape.
MESS_DIALS: tuple[str, ...] = ("forgot_email", "vague_item", "also_request", "pushback", "underspecified")
SHAPE_DIALS: tuple[str, ...] = ("chained", "refusal", "with_write", "multi_item")
DIALS: tuple[str, ...] = (*MESS_DIALS, *SHAPE_DIALS)
PLAIN = "plain"


@dataclass(frozen=True)
class TemplateSpec:
    name: str
    tool: str  # the write carried out, or (refusals) the write asked for and refused
    outcome: str  # "done" or "refused"
    modes: tuple[str, ...]  # failure modes a task on this template exercises
    refusal: str | None = None  # why the policy says no
    items: bool = False  # the customer names items (vague descriptions, one or two items)
    record: bool = True  # the request is about one record (not the customer's account)
    omissible: bool = True  # that record's id can be left unsaid (the agent asks); not for another's record
    question: bool = False  # no write serves it (a question, a request no tool can serve): `tool` is a read tool

    def dials(self) -> tuple[str, ...]:
        """The dials that make sense for this template (its coverage cells, besides 'plain')."""
        out = ["forgot_email", "also_request"]
        if self.items:
            out.append("vague_item")
        if self.record and self.omissible:
            out.append("underspecified")
        if self.outcome == "refused":
            out += ["pushback", "with_write"]
        else:
            out += ["refusal"] if self.question else ["chained", "refusal"]
            if self.items:
                out.append("multi_item")
        return tuple(d for d in DIALS if d in out)


class Taxonomy(Mapping[str, TemplateSpec]):
    """A domain's template specs by name, in the domain's sequence, and the questions synthesis asks of them."""

    def __init__(self, specs: tuple[TemplateSpec, ...] | list[TemplateSpec]) -> None:
        self._specs = {s.name: s for s in specs}
        if len(self._specs) != len(specs):
            raise ValueError("taxonomy: template names must be unique")

    def __getitem__(self, name: str) -> TemplateSpec:
        return self._specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def twin(self, template: str) -> str | None:
        """A refusal's twin: the template making the same write where the policy allows it (None for a write).

        Trained beside the refusal, it shows what makes the refusal right (the status, the balance, the owner),
        so a model taught to refuse does not refuse every request that looks alike."""
        spec = self[template]
        if spec.outcome != "refused":
            return None
        return next(n for n, s in self.items() if s.outcome == "done" and s.tool == spec.tool)

    def refusals(self, template: str) -> list[str]:
        """A write's refused twins: the templates asking for the same write where the policy forbids it (a wrong
        status, a short balance, another customer's record); none for a refusal or a question.

        Trained beside the write, they show where it stops, so a model taught to make it does not make it
        wherever a request looks alike."""
        spec = self[template]
        if spec.outcome != "done" or spec.question:
            return []
        return [n for n, s in self.items() if s.outcome == "refused" and s.tool == spec.tool]

    def templates_for(self, mode: str, outcome: str | None = None) -> list[str]:
        """Templates tagged with `mode` (and of `outcome`, if given), in taxonomy sequence."""
        return [n for n, s in self.items() if mode in s.modes and (outcome is None or s.outcome == outcome)]

    def cells(self, mode: str | None = None) -> list[tuple[str, str, str]]:
        """Every (template, dial, outcome) coverage cell, optionally only of templates tagged `mode`."""
        return [
            (n, d, s.outcome) for n, s in self.items() if mode is None or mode in s.modes for d in (PLAIN, *s.dials())
        ]

    def writes(self) -> frozenset[str]:
        """The tools the templates write (or ask for and get refused)."""
        return frozenset(s.tool for s in self.values() if not s.question)
