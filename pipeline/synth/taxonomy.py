"""The template taxonomy: what each atomic template writes or refuses, and which failure modes it exercises.

Every retail write has a template that carries it out, and every refusal the policy requires (wrong status,
another customer's order, a bad cancellation reason, a gift card that falls short, a second item
modification) has one whose right answer is "no". A template's failure-mode tags say which mistakes a task
built on it can catch: an order-status read can be misread, a written value can be invented, a confirmed
write can be skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.grading.failure_modes import FAILURE_MODES
from pipeline.synth.atomic import TEMPLATES
from pipeline.world.retail.tools import WRITE_TOOLS

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
    order: bool = True  # the request is about one order (so it can be stated without its id)

    def dials(self) -> tuple[str, ...]:
        """The dials that make sense for this template (its coverage cells, besides 'plain')."""
        out = ["forgot_email", "also_request"]
        if self.items:
            out.append("vague_item")
        if self.order and self.refusal != "another_customer":
            out.append("underspecified")
        if self.outcome == "refused":
            out += ["pushback", "with_write"]
        else:
            out += ["chained", "refusal"]
            if self.items:
                out.append("multi_item")
        return tuple(d for d in DIALS if d in out)


ALL = tuple(FAILURE_MODES)
_WRITES = ("plan_adherence", "invention")
TAXONOMY: dict[str, TemplateSpec] = {
    s.name: s
    for s in (
        TemplateSpec("cancel", "cancel_pending_order", "done", ALL),
        TemplateSpec("modify_address", "modify_pending_order_address", "done", ALL),
        TemplateSpec("modify_payment", "modify_pending_order_payment", "done", ALL),
        TemplateSpec("modify_items", "modify_pending_order_items", "done", ALL, items=True),
        TemplateSpec("return", "return_delivered_order_items", "done", ALL, items=True),
        TemplateSpec("exchange", "exchange_delivered_order_items", "done", ALL, items=True),
        TemplateSpec("modify_user_address", "modify_user_address", "done", _WRITES, order=False),
        TemplateSpec("cancel_wrong_status", "cancel_pending_order", "refused", ("misread",), "wrong_status"),
        TemplateSpec("modify_wrong_status", "modify_pending_order_address", "refused", ("misread",), "wrong_status"),
        TemplateSpec(
            "return_wrong_status", "return_delivered_order_items", "refused", ("misread",), "wrong_status", items=True
        ),
        TemplateSpec(
            "other_customer", "cancel_pending_order", "refused", ("plan_adherence", "misread"), "another_customer"
        ),
        TemplateSpec("bad_cancel_reason", "cancel_pending_order", "refused", ("invention",), "bad_cancel_reason"),
        TemplateSpec("gift_card_short", "modify_pending_order_payment", "refused", ("misread",), "gift_card_short"),
        TemplateSpec(
            "second_modification",
            "modify_pending_order_items",
            "refused",
            ("misread",),
            "second_modification",
            items=True,
        ),
    )
}
assert set(TAXONOMY) == set(TEMPLATES), "every atomic template needs a taxonomy entry"
assert {s.tool for s in TAXONOMY.values() if s.outcome == "done"} == set(WRITE_TOOLS), "every write needs a template"


def twin(template: str) -> str | None:
    """A refusal's twin: the template making the same write where the policy allows it (None for a write).

    Trained beside the refusal, it shows what makes the refusal right (the status, the balance, the owner), so
    a model taught to refuse does not refuse every request that looks alike."""
    spec = TAXONOMY[template]
    if spec.outcome != "refused":
        return None
    return next(n for n, s in TAXONOMY.items() if s.outcome == "done" and s.tool == spec.tool)


def templates_for(mode: str, outcome: str | None = None) -> list[str]:
    """Templates tagged with `mode` (and of `outcome`, if given), in taxonomy order."""
    return [n for n, s in TAXONOMY.items() if mode in s.modes and (outcome is None or s.outcome == outcome)]


def cells(mode: str | None = None) -> list[tuple[str, str, str]]:
    """Every (template, dial, outcome) coverage cell, optionally only of templates tagged `mode`."""
    return [
        (n, d, s.outcome) for n, s in TAXONOMY.items() if mode is None or mode in s.modes for d in (PLAIN, *s.dials())
    ]
