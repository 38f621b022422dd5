"""Retail's words for the failure-mode rules: the policy's cancellation reasons, the order statuses, order ids,
where payment methods are listed and which write changes an order's payment, the look-up groups and which write
serves which request intent."""

from __future__ import annotations

from typing import Literal

from pipeline.domains.retail.schema import CANCEL_REASONS, ORDER_STATUSES
from pipeline.world import Vocabulary

Intent = Literal[
    "cancel",
    "modify_address",
    "modify_payment",
    "modify_items",
    "return",
    "exchange",
    "modify_user_address",
    "info",
    "transfer",
]
"""Retail's request intents (a `Request.intent`): what the customer asks for, one per write and two more."""

_NOT_SHIPPED = {"pending", "pending (item modified)", "cancelled"}

VOCABULARY = Vocabulary(
    choices={"reason": frozenset(CANCEL_REASONS)},
    statuses=ORDER_STATUSES,
    status_synonyms={"canceled": "cancelled"},
    # 'shipped' is no status of its own: it agrees with every status after pending
    status_covers={
        "shipped": frozenset(s for s in ORDER_STATUSES if s not in _NOT_SHIPPED),
        "pending": frozenset({"pending (item modified)"}),
    },
    record_key="order_id",
    payment_methods_from="get_user_details",
    payment_argument="payment_method_id",
    payment_change="modify_pending_order_payment",
    record_ref=r"#W\d+",
    required_status={
        "cancel_pending_order": "pending",
        "modify_pending_order_address": "pending",
        "modify_pending_order_payment": "pending",
        "modify_pending_order_items": "pending",
        "return_delivered_order_items": "delivered",
        "exchange_delivered_order_items": "delivered",
    },
    lookup_groups={
        "find_user_id_by_email": "user",
        "find_user_id_by_name_zip": "user",
        "get_user_details": "user",
        "get_order_details": "order",
        "get_product_details": "product",
        "get_item_details": "product",
        "list_all_product_types": "product",
    },
    write_intents={
        "cancel_pending_order": "cancel",
        "modify_pending_order_address": "modify_address",
        "modify_pending_order_payment": "modify_payment",
        "modify_pending_order_items": "modify_items",
        "return_delivered_order_items": "return",
        "exchange_delivered_order_items": "exchange",
        "modify_user_address": "modify_user_address",
    },
)
