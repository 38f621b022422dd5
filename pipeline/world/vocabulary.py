"""A domain's vocabulary: the words the failure-mode rules read in tool calls and in what the agent says.

The rules themselves (pipeline.grading.mode_rules) are generic; which argument values are picks from a list the
policy enumerates, which statuses a record can be in and how a message cites a record are the domain's, declared
through `Domain.vocabulary()`. A domain that declares none gets `EMPTY`: no argument is an enumerated choice and
no message is read as stating a status, so those rules stay silent instead of guessing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType


def _frozen(mapping: Mapping) -> Mapping:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class Vocabulary:
    """The domain words behind the invention and misread rules."""

    choices: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Write argument → the values the policy enumerates for it (retail: a cancellation `reason`). Such a value is
    the agent's pick from the policy, not a fact that must come from the conversation: never invention."""

    statuses: tuple[str, ...] = ()
    """Every status a record can be shown in, as the tools write it (retail: the order statuses). A message saying
    a record is in one is checked against the status the tools last showed for it."""

    status_synonyms: Mapping[str, str] = field(default_factory=dict)
    """Another word for a status (lower case) → the status it stands for (retail: 'canceled' → 'cancelled')."""

    status_covers: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """A stated word → the other shown statuses it agrees with. A word that is no status of its own is an umbrella
    (retail: 'shipped' covers every order status after pending); 'pending' covers 'pending (item modified)'."""

    record_key: str | None = None
    """The field that names a record whose status the tools show, in a tool's JSON result and in a write's
    arguments (retail: 'order_id'); None: no record's status is followed."""

    record_ref: str | None = None
    """Regular expression for how a message cites a record whose status the tools show (retail: r'#W\\d+', an
    order id); None: messages cite none, and no status claim is read."""

    required_status: Mapping[str, str] = field(default_factory=dict)
    """Write tool → the status its record must be shown in (retail: cancel_pending_order needs 'pending'); a write
    on a record the tools showed otherwise is a misread."""

    lookup_groups: Mapping[str, str] = field(default_factory=dict)
    """Look-up tool → what it looks up (retail: 'user', 'order', 'product'). A look-up that found nothing counts as
    recovered when a later look-up of the same group succeeded (the failure signature empty_lookup_unrecovered)."""

    write_intents: Mapping[str, str] = field(default_factory=dict)
    """Write tool → the request intent it serves (retail: cancel_pending_order → 'cancel'): a request with no
    record named counts as addressed once a write of its intent was called."""

    workflow_steps: Mapping[str, str] = field(default_factory=dict)
    """Dual control: a regular expression over what one of the customer's own tools showed → the customer's tool
    the workflow fixes that with (telecom: 'Airplane Mode: ON' → toggle_airplane_mode). Shown, never asked for
    afterwards, and the end state short of the task's assertions: a skipped step."""

    harmful_changes: tuple[str, ...] = ()
    """Dual control: regular expressions over the result of a change the customer made that leave their side
    worse (telecom: 'Airplane Mode is now ON'). Asked for by the agent while the end state falls short: a wrong
    instruction."""

    payment_methods_from: str | None = None
    """The read tool whose result lists a customer's payment methods under `payment_methods` (retail:
    'get_user_details'); a write paying with a method it did not list (when the id came from the conversation) is a
    misread. None: payment methods are not followed."""

    payment_argument: str | None = None
    """The write argument that names a payment method (retail: 'payment_method_id')."""

    payment_change: str | None = None
    """The write that moves a record's payment to another method (retail: 'modify_pending_order_payment'); paying
    with a gift card whose shown balance is below the record's shown payment is a misread."""

    def __post_init__(self) -> None:
        mappings = (
            "choices",
            "status_synonyms",
            "status_covers",
            "required_status",
            "lookup_groups",
            "write_intents",
            "workflow_steps",
        )
        for name in mappings:
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        for pattern in (*self.workflow_steps, *self.harmful_changes):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"vocabulary pattern {pattern!r} is not a regular expression: {exc}") from None
        if self.record_ref is not None:
            try:
                re.compile(self.record_ref)
            except re.error as exc:
                msg = f"vocabulary record_ref {self.record_ref!r} is not a regular expression: {exc}"
                raise ValueError(msg) from None

    def canonical(self, word: str) -> str:
        """The status a stated word stands for (case does not count)."""
        s = word.lower()
        return self.status_synonyms.get(s, s)

    def compatible(self, claimed: str, shown: str) -> bool:
        """Whether a stated status agrees with the one a tool showed."""
        return claimed == shown or shown in self.status_covers.get(claimed, ())

    @cached_property
    def ref_pattern(self) -> re.Pattern[str] | None:
        return re.compile(self.record_ref) if self.record_ref else None

    @cached_property
    def status_claim_pattern(self) -> re.Pattern[str] | None:
        """'#W1 is processed', '#W1 ... (status 'pending (item modified)')', '#W1 is already delivered'; not 'has
        been cancelled' nor 'is now ...' (those claim a change, a completion claim, not a reading of a status)."""
        words = {*self.statuses, *self.status_synonyms, *self.status_covers}
        if not self.record_ref or not words:
            return None
        alt = "|".join(re.escape(s) for s in sorted(words, key=len, reverse=True))
        return re.compile(
            rf"((?:{self.record_ref}))[^.!?\n]{{0,60}}?\b(?:is|was|status(?: is)?|has (?:the )?status|shows as)\s+"
            rf"(?:currently\s+|already\s+|still\s+|marked\s+as\s+|in\s+)?['\"]?({alt})['\"]?",
            re.IGNORECASE,
        )


EMPTY = Vocabulary()
