"""The failure-mode vocabulary each domain declares, and how the generic rules read it."""

from __future__ import annotations

import pytest

from pipeline.grading.failure_modes import vocabulary_of
from pipeline.grading.utterances import order_ids, status_claims, status_compatible
from pipeline.world.domain import Domain, DomainCapabilityError
from pipeline.world.registry import resolve_domain
from pipeline.world.tools import ToolRegistry
from pipeline.world.vocabulary import EMPTY, Vocabulary


def test_retail_declares_its_cancel_reasons_statuses_and_order_ids():
    from pipeline.domains.retail.schema import CANCEL_REASONS, ORDER_STATUSES

    v = resolve_domain("retail").require("vocabulary")
    assert v.choices == {"reason": frozenset(CANCEL_REASONS)}
    assert v.statuses == ORDER_STATUSES and v.record_key == "order_id"
    assert v.required_status["cancel_pending_order"] == "pending"
    assert order_ids("orders #W1234 and #W99", v) == ["#W1234", "#W99"]
    text = "Order #W1 is 'pending (item modified)'; #W2 is already Canceled; #W3 has been cancelled."
    assert status_claims(text, v) == [("#W1", "pending (item modified)"), ("#W2", "cancelled")]


@pytest.mark.parametrize(
    ("claimed", "shown", "agrees"),
    [
        ("delivered", "delivered", True),
        ("shipped", "processed", True),
        ("shipped", "delivered", True),
        ("shipped", "return requested", True),
        ("shipped", "pending", False),
        ("shipped", "pending (item modified)", False),
        ("shipped", "cancelled", False),
        ("pending", "pending (item modified)", True),
        ("pending (item modified)", "pending", False),
        ("delivered", "processed", False),
    ],
)
def test_retail_status_agreement(claimed, shown, agrees):
    assert status_compatible(claimed, shown, resolve_domain("retail").require("vocabulary")) is agrees


def test_airline_declares_its_statuses_and_its_enumerated_picks():
    from pipeline.domains.airline.schema import CABINS, FlightStatus

    v = resolve_domain("airline").require("vocabulary")
    assert set(v.statuses) == set(FlightStatus.__args__) | {"cancelled"}
    assert set(v.choices) == {"cabin", "flight_type", "insurance"} and v.choices["cabin"] == set(CABINS)
    assert v.record_key == "reservation_id" and v.write_intents["book_reservation"] == "book"
    assert status_claims("Reservation ZFA04Y is cancelled and HAT001 is delayed.", v) == []


class Bare(Domain):
    """A plug-in domain that declares no vocabulary."""

    name, tables, tools = "bare", {}, ToolRegistry()

    def load(self, ref):
        return None

    def policy(self):
        return ""

    def owner(self, table, record):
        return None


def test_a_domain_without_a_vocabulary_reads_nothing_domain_specific():
    assert not Bare().provides("vocabulary")
    with pytest.raises(DomainCapabilityError, match="'bare' does not provide 'vocabulary'"):
        Bare().require("vocabulary", "failure analysis")
    assert status_claims("Order #W1 is delivered.", EMPTY) == [] and order_ids("#W1", EMPTY) == []
    assert vocabulary_of(f"{__name__}:Bare") is EMPTY
    assert vocabulary_of("retail") is resolve_domain("retail").vocabulary()


def test_a_bad_record_pattern_is_refused_by_name():
    with pytest.raises(ValueError, match="record_ref '#W\\(' is not a regular expression"):
        Vocabulary(record_ref="#W(")
