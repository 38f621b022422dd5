"""The synthesis kit: what a domain hands the generic synthesizer through its `synthesis()` capability.

Synthesis grows tasks for any domain from what the domain declares: its tools (their schemas and kinds), its
records (read through `World.query`), and its kit: the atomic templates (each drafts one request of one customer
when its preconditions hold, or the request the policy refuses), their taxonomy, and how the customer's script is
worded. Evolution, coverage, verification by executing the gold actions, and rework are the same for every
domain. `kit_of` fetches a domain's kit and checks it against the domain's tools once.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from pipeline.authoring.drafts import Draft, Want
from pipeline.authoring.taxonomy import MESS_DIALS, Taxonomy
from pipeline.dataset import Action, KnownInfo, Request, Task, TaskCheck
from pipeline.errors import InputError
from pipeline.grading.modes import FAILURE_MODES
from pipeline.world import domain_label

if TYPE_CHECKING:
    from pipeline.authoring.selection_kit import SelectionKit
    from pipeline.world import Domain, Session, ToolRegistry, World


class SynthesisKitError(InputError, ValueError):
    """A domain's synthesis kit that does not fit the domain's tools; the message names the domain."""


class Grounding(Protocol):
    """One world's records as a kit's templates read them (built by `SynthesisKit.ground`, from `World.query`)."""

    @property
    def world(self) -> World:
        """The world the records are read from."""
        ...

    @property
    def customers(self) -> list[str]:
        """Every customer's user id, sorted: the candidates a task may be grounded in (shuffled per task)."""
        ...

    def customer(self, user_id: str) -> Any:
        """The customer's record."""
        ...

    def identifiable_without_email(self, customer: Any) -> bool:
        """Whether the customer can still be identified without their email (the 'forgot_email' mess)."""
        ...


AtomicTemplate = Callable[[Any, Any, random.Random, set[str], Want], Draft | None]
"""`f(grounding, customer, rng, exclude, want)`: a draft of one request of this customer, or None when nothing
of theirs fits. `exclude` holds the draft records earlier requests of the task used; `want` what a harder variant
asks (two items, say)."""


class SynthesisKit(ABC):
    """A domain's atomic templates and the words around them. Subclass it and return an instance from the
    domain's `synthesis()`."""

    taxonomy: Taxonomy
    """One spec per template: the write it makes or asks for, done or refused, the failure modes it exercises."""

    templates: Mapping[str, AtomicTemplate]
    """The drafting function of each taxonomy entry, by the same names."""

    notes: Mapping[str, str]
    """Mess dial → the sentence the customer's goal gains when that mess is on (every mess dial)."""

    business: str = "a customer-service desk"
    """What the judge prompts call the business (e.g. 'a bookshop')."""

    items_argument: str | None = None
    """The write argument listing the items a request changes (counted for 'multi_item'); None: no items."""

    underspecify_rate: float = 0.0
    """How often a plain generated (held-out) task leaves its record unsaid, so the agent must ask first."""

    @abstractmethod
    def ground(self, world: World) -> Grounding:
        """The world's records as the templates read them; built once per synthesis run."""

    @abstractmethod
    def known(self, customer: Any) -> KnownInfo:
        """What the customer can tell the agent about themselves (the identity tools' arguments come from it)."""

    def unspecify(self, request: Request) -> Request | None:
        """The request stated without the record it is about (the agent must ask); None if it cannot be."""
        return None

    def record_of(self, request: Request) -> str | None:
        """The id of the record a request is about, if any."""
        return None

    def checks(self, session: Session, drafts: list[Draft]) -> list[TaskCheck]:
        """Task checks read from the gold end state (e.g. a record's status); none by default."""
        return []

    def gaps(self, ground: Grounding, tasks: list[Task]) -> list[str]:
        """Cells of the kit's coverage that `tasks` leave uncovered and `aimed` may aim at; none by default."""
        return []

    def aimed(self, ground: Grounding, aim: str, rng: random.Random) -> Iterator[tuple[str, Draft]]:
        """(customer id, draft) pairs aimed at the gap `aim`, best first; none by default."""
        return iter(())

    def why_not(self, ground: Grounding, aim: str) -> str:
        """Why `aimed` offered no draft for `aim`."""
        return "the kit cannot aim a task at it"


_CHECKED: dict[tuple[int, int], SynthesisKit] = {}


def kit_of(domain: Domain, needed_for: str) -> SynthesisKit | SelectionKit:
    """The domain's synthesis kit (a DomainCapabilityError when it has none), checked against its tools."""
    kit = domain.require("synthesis", needed_for=needed_for)
    key = (id(domain), id(kit))
    if key not in _CHECKED:
        check_kit(domain, kit)
        _CHECKED[key] = kit
    return kit


def template_kit_of(domain: Domain, needed_for: str) -> SynthesisKit:
    """The domain's kit of templates; a domain that selects its tasks from a pool has none to grow them from."""
    kit = kit_of(domain, needed_for)
    if not isinstance(kit, SynthesisKit):
        raise SynthesisKitError(
            f"domain {domain_label(domain)!r} draws its tasks from a pool (a selection kit): it has no templates to"
            f" {needed_for} from"
        )
    return kit


def check_kit(domain: Domain, kit: Any) -> None:
    """Raise SynthesisKitError naming the domain for each way the kit does not fit the domain (a selection kit,
    `pipeline.synth.select`, draws tasks from a pool and has no templates to check)."""
    from pipeline.authoring.selection_kit import SelectionKit

    where = f"domain {domain_label(domain)!r} synthesis kit"
    if isinstance(kit, SelectionKit):
        return
    if not isinstance(kit, SynthesisKit):
        raise SynthesisKitError(f"{where}: is a {type(kit).__name__}, not a pipeline.authoring.kit.SynthesisKit")
    tax, writes = kit.taxonomy, domain.tools.of_kind("write")
    problems = []
    if set(tax) != set(kit.templates):
        problems.append(f"templates {sorted(set(kit.templates) ^ set(tax))} are not both in taxonomy and templates")
    asked = {s.tool for s in tax.values() if s.question}
    if asked - domain.tools.of_kind("read", "identity"):
        problems.append(
            f"questions read with tools that are not read tools: {sorted(asked - domain.tools.of_kind('read'))}"
        )
    if tax.writes() - writes:
        problems.append(f"templates use tools that are not write tools: {sorted(tax.writes() - writes)}")
    done = {s.tool for s in tax.values() if s.outcome == "done" and not s.question}
    if done != writes:
        problems.append(f"write tools without a template that carries them out: {sorted(writes - done)}")
    for s in tax.values():
        if s.outcome not in ("done", "refused"):
            problems.append(f"template {s.name!r}: outcome {s.outcome!r} is neither 'done' nor 'refused'")
        if not s.modes or set(s.modes) - set(FAILURE_MODES):
            problems.append(f"template {s.name!r}: modes {list(s.modes)} must be some of {list(FAILURE_MODES)}")
    missing = [d for d in MESS_DIALS if d not in kit.notes]
    if missing:
        problems.append(f"notes lack the mess dial(s) {missing}")
    if not domain.tools.of_kind("identity"):
        problems.append("the domain has no identity tool to authenticate the customer with")
    if problems:
        raise SynthesisKitError(f"{where}: " + "; ".join(problems))


def authenticate(tools: ToolRegistry, known: KnownInfo, without_email: bool) -> Action:
    """The first identity tool (in the domain's tool sequence) whose every argument the customer knows.

    Without their email the customer is identified by what else they know (name and zip code, say)."""
    have = {k: v for k, v in known.stated().items() if not (without_email and k == "email")}
    for name in [n for n, t in tools.tools.items() if t.kind == "identity"]:
        params = list(tools[name].args_model.model_fields)
        if params and all(p in have for p in params):
            return Action(name=name, arguments={p: have[p] for p in params})
    raise SynthesisKitError(
        f"no identity tool takes only what the customer knows ({sorted(have)}); identity tools:"
        f" {sorted(tools.of_kind('identity'))}"
    )
