"""The retail synthesis kit: the atomic templates, their taxonomy, and the customer's words around them."""

from __future__ import annotations

from typing import cast

from pipeline.authoring import Draft, SynthesisKit
from pipeline.dataset import KnownInfo, OrderStatusCheck, Request, TaskCheck
from pipeline.domains.retail.schema import User
from pipeline.domains.retail.state import RetailWorld
from pipeline.domains.retail.synthesis.atomic import TEMPLATES
from pipeline.domains.retail.synthesis.grounding import Ctx
from pipeline.domains.retail.synthesis.taxonomy import TAXONOMY
from pipeline.world import Session, World

NOTES = {
    "forgot_email": "You do not remember your email address; you can give your name and zip code.",
    "vague_item": "At first you describe the items only vaguely.",
    "also_request": "You bring up your last request only after the others are done.",
    "pushback": "When the agent refuses, you push back once.",
    "underspecified": "At first you do not say which order you mean; you give the order id when asked.",
}


class RetailKit(SynthesisKit):
    taxonomy = TAXONOMY
    templates = TEMPLATES
    notes = NOTES
    business = "a retail store"
    items_argument = "item_ids"

    def ground(self, world: World) -> Ctx:
        return Ctx(cast(RetailWorld, world))  # the retail domain's worlds are RetailWorlds

    def known(self, customer: User) -> KnownInfo:
        name = customer.name
        return KnownInfo(
            email=customer.email, first_name=name.first_name, last_name=name.last_name, zip=customer.address.zip
        )

    def unspecify(self, request: Request) -> Request | None:
        """The request stated without its order id (the agent must ask which order); None if it cannot be."""
        said = f"my order {request.order_id}"
        if not request.order_id or said not in request.utterance:
            return None
        vague = request.vague_utterance.replace(said, "one of my orders") if request.vague_utterance else None
        return request.model_copy(
            update={"utterance": request.utterance.replace(said, "one of my orders"), "vague_utterance": vague}
        )

    def record_of(self, request: Request) -> str | None:
        return request.order_id

    def checks(self, session: Session, drafts: list[Draft]) -> list[TaskCheck]:
        """The status each written order is left in."""
        orders = [d.request.order_id for d in drafts if d.write is not None and d.request.order_id]
        return [
            OrderStatusCheck(order_id=o, status=session.get("orders", o).status)
            for o in orders
            if session.get("orders", o) is not None
        ]


RETAIL_KIT = RetailKit()
