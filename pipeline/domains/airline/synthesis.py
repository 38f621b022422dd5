"""The airline synthesis kit (the airline domain's `synthesis()` capability): its templates, their taxonomy, and the
customer's words around them.

The atomic templates are the airline task generator's (`pipeline.domains.airline.templates`), grounded in the
world's records through the same `Ctx`: every airline write has one that carries it out, and every refusal the
policy requires and the tools enforce has one whose right answer is "no" (a basic economy or economy reservation
without insurance cancelled outside 24 hours, a basic economy flight change, a bag removed, a passenger added).
A template's failure-mode tags are the modes the airline flawed agent can plant on it and the grader can name.
"""

from __future__ import annotations

from pipeline.authoring import SynthesisKit, Taxonomy, TemplateSpec, expand_cycle
from pipeline.dataset import KnownInfo, Request
from pipeline.domains.airline.grounding import Ctx
from pipeline.domains.airline.schema import User
from pipeline.domains.airline.templates import TEMPLATES
from pipeline.grading.modes import FAILURE_MODES
from pipeline.world import World

ALL = FAILURE_MODES
_WRITES = tuple(m for m in ALL if m != "misread")  # a write no misread variant of the flawed agent applies to
TAXONOMY = Taxonomy(
    (
        TemplateSpec("book", "book_reservation", "done", ALL, record=False),
        TemplateSpec("cancel", "cancel_reservation", "done", _WRITES),
        TemplateSpec("update_flights", "update_reservation_flights", "done", ALL),
        TemplateSpec("update_baggages", "update_reservation_baggages", "done", ALL),
        TemplateSpec("update_passengers", "update_reservation_passengers", "done", ALL),
        TemplateSpec("send_certificate", "send_certificate", "done", _WRITES),
        TemplateSpec("cancel_not_allowed", "cancel_reservation", "refused", ("misread",), "cancel_not_covered"),
        TemplateSpec(
            "basic_economy_change", "update_reservation_flights", "refused", ("misread",), "basic_economy_flights"
        ),
        TemplateSpec("remove_bag", "update_reservation_baggages", "refused", ("plan_adherence",), "bags_removed"),
        TemplateSpec(
            "add_passenger", "update_reservation_passengers", "refused", ("plan_adherence",), "passenger_count"
        ),
    )
)

NOTES = {
    "forgot_email": "You do not remember your email address; you identify yourself with your user id.",
    "vague_item": "",
    "also_request": "You bring up your last request only after the others are done.",
    "pushback": "When the agent refuses, you push back once.",
    "underspecified": "At first you do not say which reservation you mean; you give the reservation id when asked.",
}


class AirlineKit(SynthesisKit):
    taxonomy = TAXONOMY
    templates = TEMPLATES
    notes = NOTES
    business = "an airline"
    items_argument = None  # a request changes one reservation; there are no items to count

    def ground(self, world: World) -> Ctx:
        return Ctx(world)

    def known(self, customer: User) -> KnownInfo:
        """The customer's user id and name: the airline identifies a customer by user id (`get_user_details`)."""
        name = customer.name
        return KnownInfo(user_id=customer.user_id, first_name=name.first_name, last_name=name.last_name)

    def unspecify(self, request: Request) -> Request | None:
        """The request stated without its reservation id (the agent must ask which); None if it cannot be."""
        rid = request.record_id
        if not rid or f"reservation {rid}" not in request.utterance:
            return None

        def drop(text: str | None) -> str | None:
            if text is None:
                return None
            text = text.replace(f"my reservation {rid}", "one of my reservations")
            return text.replace(f"reservation {rid}", "one of my reservations")

        return request.model_copy(
            update={"utterance": drop(request.utterance), "vague_utterance": drop(request.vague_utterance)}
        )

    def record_of(self, request: Request) -> str | None:
        return request.record_id


AIRLINE_KIT = AirlineKit()
AIRLINE_CYCLE: tuple[str, ...] = tuple(expand_cycle(AIRLINE_KIT))
"""The default synthesis cycle spelled out with airline's templates (every template, then three pairs)."""
