"""The retail template taxonomy: what each atomic template writes or refuses, and which failure modes it exercises.

Every retail write has a template that carries it out, and every refusal the policy requires (wrong status,
another customer's order, a bad cancellation reason, a gift card that falls short, a second item
modification) has one whose right answer is "no". An order-status read can be misread, a written value can be
invented, a confirmed write can be skipped, a request the policy allows can be left undone.
"""

from __future__ import annotations

from pipeline.authoring import Taxonomy, TemplateSpec
from pipeline.grading.modes import FAILURE_MODES

ALL = tuple(FAILURE_MODES)
_WRITES = tuple(m for m in ALL if m != "misread")  # no order: no status to misread
TAXONOMY = Taxonomy(
    (
        TemplateSpec("cancel", "cancel_pending_order", "done", ALL),
        TemplateSpec("modify_address", "modify_pending_order_address", "done", ALL),
        TemplateSpec("modify_payment", "modify_pending_order_payment", "done", ALL),
        TemplateSpec("modify_items", "modify_pending_order_items", "done", ALL, items=True),
        TemplateSpec("return", "return_delivered_order_items", "done", ALL, items=True),
        TemplateSpec("exchange", "exchange_delivered_order_items", "done", ALL, items=True),
        TemplateSpec("modify_user_address", "modify_user_address", "done", _WRITES, record=False),
        TemplateSpec("cancel_wrong_status", "cancel_pending_order", "refused", ("misread",), "wrong_status"),
        TemplateSpec("modify_wrong_status", "modify_pending_order_address", "refused", ("misread",), "wrong_status"),
        TemplateSpec(
            "return_wrong_status", "return_delivered_order_items", "refused", ("misread",), "wrong_status", items=True
        ),
        TemplateSpec(
            "other_customer",
            "cancel_pending_order",
            "refused",
            ("plan_adherence", "misread"),
            "another_customer",
            omissible=False,
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
)
