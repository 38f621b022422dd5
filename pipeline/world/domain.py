"""The domain boundary: what a domain (retail, airline, yours) provides to the generic loop.

A domain is one package behind the `Domain` interface below. The generic machinery — the copy-on-write session
over named tables, the tool registry and log, state diff and hashing, the runner, executors, verdict, failure-mode
analysis, metrics, target, curate, train, gate, report — reaches a domain only through this interface, and names
none. Required pieces are abstract; optional capabilities (synthesis, an oracle, flaws, user phrasing, a τ²-bench
importer, the failure-mode vocabulary) return None by default, and `require` turns a missing one into an error
naming the domain and the capability.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from pipeline.errors import WorldError
from pipeline.world.origin import domain_label

if TYPE_CHECKING:
    from pathlib import Path

    from pipeline.authoring import SynthesisKit
    from pipeline.dataset import Task
    from pipeline.grading import ComponentResult
    from pipeline.rollout import Agent, Message
    from pipeline.users.scripted import Phrasing
    from pipeline.world.tables import Session, World
    from pipeline.world.tools import ToolRegistry
    from pipeline.world.vocabulary import Vocabulary

CAPABILITIES: dict[str, str] = {
    "tau2_importer": "load a τ²-bench domain directory (db.json, tasks.json, policy.md) into a world and tasks",
    "tau2_gold": "the domain's side of a τ²-bench task's gold conversation (authentication, an extra write)",
    "generator": "generate fresh seeded worlds (gen-<seed> references)",
    "tasks": "generate held-out evaluation tasks from a world",
    "synthesis": "atomic actions with preconditions and refusals, for task synthesis",
    "oracle": "a scripted agent that follows the policy",
    "flaws": "a scripted agent that plants the failure modes",
    "user_phrasing": "how a scripted customer states requests and answers questions",
    "vocabulary": "the words the failure-mode rules read: enumerated argument values, record statuses, record ids",
}


GENERIC_CAPABILITIES = "pipeline.explore.generic:generic_capability"
"""The plug-in that grows what a domain does not provide from its tools and worlds by execution: `f(domain, name)`
returns the generic capability or None. Loaded by name when first asked for, as the built-in domains are
(`pipeline.world.registry.BUILTIN_DOMAINS`): the world is the bottom layer and imports nothing above it."""

GENERIC_GAP = "pipeline.explore.generic:generic_gap"
"""The plug-in's reason it grows nothing: `f(domain, name)` says what the domain lacks for the generic `name`
(which kind of tool), or None, so a refusal says why and not only what."""


def _loaded(target: str) -> Any:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


@lru_cache(maxsize=1)
def generic_capabilities() -> Callable[[Domain, str], Any]:
    return _loaded(GENERIC_CAPABILITIES)


@lru_cache(maxsize=1)
def generic_gap() -> Callable[[Domain, str], str | None]:
    return _loaded(GENERIC_GAP)


class DomainCapabilityError(WorldError, LookupError):
    """A domain asked for something it does not provide; the message names the domain, the capability and, where
    known, why the generic path could not grow it."""

    def __init__(self, domain: str, capability: str, needed_for: str | None = None, reason: str | None = None) -> None:
        what = CAPABILITIES.get(capability, capability)
        why = f", needed for {needed_for}" if needed_for else ""
        because = f": {reason}" if reason else ""
        super().__init__(f"domain {domain!r} does not provide {capability!r} ({what}){why}{because}")
        self.domain, self.capability = domain, capability


@dataclass(frozen=True)
class Invariant:
    """A rule every episode of the domain must keep, whatever the task (a static check named 'static.<name>').

    `check` receives a `StaticInput` (world, world log, final state delta, messages) and returns a
    `ComponentResult`.
    """

    name: str
    check: Callable[[Any], ComponentResult]
    enforced: bool = True
    """Kept by the tools too: `execute` refuses and undoes a write that would break it. False: graded only (a rule
    the domain's reference data itself does not keep)."""


@dataclass(frozen=True)
class StaticInput:
    """What an invariant and the static checks look at (the grader builds it; the tools build one for the records
    a call touched); `log` must hold one event per tool call, in call order."""

    world: World
    log: list[dict[str, Any]]
    final_changed: Mapping[str, Mapping[str, dict]]
    messages: list[Message] = field(default_factory=list)
    max_tool_calls: int | None = None
    excused_writes: frozenset[str] = frozenset()  # call_key()s of writes the gold actions attempt and get refused
    # settles a reply the confirmation reading finds unclear: (question, reply) -> confirmed; None: not confirmed
    resolve_unclear: Callable[[str, str], bool] | None = None


class Tau2Importer(Protocol):
    """Reads a τ²-bench domain directory of this domain."""

    replay_tables: tuple[str, ...]
    """The tables a replay line's `changed` holds, in output order."""

    def load(self, path: str | Path) -> tuple[World, list[Task]]:
        """The directory's world (its db.json under its policy.md) and its tasks in file order."""
        ...


class Domain(ABC):
    """One domain behind the generic loop. Subclass it, fill in the abstract parts, and name it in
    `world.domain` (a built-in name or `module:attribute`)."""

    name: str
    """Short name, e.g. 'retail'; errors and logs use it."""

    tables: Mapping[str, type[BaseModel]]
    """Table name → pydantic record type, in the domain's table order. A database is {table: {key: record}}."""

    tools: ToolRegistry
    """Every tool the agent may call: JSON Schema from the signature and docstring, a kind (read, write, identity,
    transfer, generic) and the function `f(session, **arguments)`; a refused call raises ToolError and changes
    nothing."""

    # ---- dual control (a customer who holds tools of their own) -------------------------------------------------
    user_tools: ToolRegistry | None = None
    """The tools the customer holds (their phone, say), or None: the customer only talks. A call runs on the side
    that made it; the other side's tools do not exist for it."""

    user_tables: Mapping[str, type[BaseModel]] = {}
    """The customer-side state: table name → record type, held in the world after `tables`. The agent's tools
    never read it; the customer's tools and the synchronisation do."""

    @abstractmethod
    def load(self, ref: str) -> World | None:
        """The world a reference names, or None when the reference is not in a form this domain reads.

        A reference is a domain directory (db.json + policy.md), a db.json file, or a domain-specific name (retail:
        `gen-<seed>`). Bad content raises WorldLoadError naming the file and the field."""

    @abstractmethod
    def policy(self) -> str:
        """The policy text the agent is held to in this domain's worlds (a directory's policy.md overrides it)."""

    @abstractmethod
    def owner(self, table: str, record: BaseModel) -> str | None:
        """Authorization: the customer (user id) a record belongs to, or None for public records (a catalogue,
        flights). Private records may be read and written only by the customer authenticated in the conversation;
        the tools enforce it, the grader flags attempts."""

    def synchronise(self, session: Session) -> None:
        """Carry facts from one side's state to the other's (dual control); runs after every tool call and every
        set-up action, inside the call's journal. Nothing by default."""
        return None

    def setup_functions(self) -> Mapping[str, ToolRegistry]:
        """Functions a task's set-up actions may call that are not tools, by side ('assistant', 'user'); a set-up
        action naming a tool of its side runs the tool. None by default."""
        return {}

    def env_assertions(self) -> Mapping[str, Mapping[str, Callable[..., bool]]]:
        """Checks on a final state a task's env assertions name, by side then name: `f(session, **arguments)`
        → bool. None by default."""
        return {}

    def invariants(self) -> list[Invariant]:
        """Domain rules for the static checks (legal transitions, money ceilings, ...); none by default."""
        return []

    def identity_fields(self) -> tuple[str, ...]:
        """What a customer can state to be identified (e.g. ('email', 'zip')), beyond the arguments of the identity
        tools, which the generic path reads off their schemas (`pipeline.explore.identity`); none by default."""
        return ()

    # ---- optional capabilities (None: not provided) ---------------------------------------------------------------
    def tau2_importer(self) -> Tau2Importer | None:
        return None

    def tau2_gold(self) -> Any | None:
        """The domain's side of the gold conversations `pipeline.tau2.gold` builds (`GoldSpeech`): how the customer
        is authenticated and what they say for it, and a write no task asks for. None: authentication by user id
        where an identity tool takes one, and no extra write."""
        return None

    def generator(self) -> Callable[[int, dict[str, int]], World] | None:
        return None

    def tasks(self) -> Callable[..., list[Task]] | None:
        """`f(world, n, seed=...) -> list[Task]`: held-out evaluation tasks grounded in `world`."""
        return None

    def synthesis(self) -> SynthesisKit | None:
        """The synthesis kit (`pipeline.authoring.kit.SynthesisKit`): atomic templates with their preconditions and
        refusals, their taxonomy, and the customer's wording, from which synthesis grows tasks."""
        return None

    def oracle(self) -> Callable[[], Agent] | None:
        """A factory of the scripted agent that follows the policy."""
        return None

    def flaws(self) -> Callable[..., Agent] | None:
        """A factory `f(rates: dict[str, float], seed: int)` of the scripted agent planting the failure modes."""
        return None

    def user_phrasing(self) -> Phrasing | None:
        """How the scripted customer states requests and answers questions (`pipeline.users.scripted.Phrasing`)."""
        return None

    def vocabulary(self) -> Vocabulary | None:
        """The domain words the failure-mode rules read (see `pipeline.world.vocabulary.Vocabulary`): argument
        values the policy enumerates, the statuses a record can be in, how a message cites a record, the status
        each write needs. None: those rules read nothing domain-specific (no enumerated choice, no status claim)."""
        return None

    def tau2_quirks(self) -> Mapping[str, Callable[..., Any]]:
        """τ²-bench tool behaviours that differ from ours, by tool name, for a τ²-compatible reward that asks to
        reproduce them: `f(session, arguments, run)` runs the call through `run()` (our tool) and may then change
        the session the way τ²-bench's tool would have; it returns the logged event. None by default."""
        return {}

    def capability(self, capability: str) -> Any | None:
        """The domain's own capability, else the generic one grown from its tools and worlds by execution
        (the `GENERIC_CAPABILITIES` plug-in: tasks, synthesis, oracle, flaws, user phrasing, for a domain with an
        identity tool and a write tool), else None."""
        if capability not in CAPABILITIES:
            raise KeyError(f"unknown capability {capability!r}; capabilities are {sorted(CAPABILITIES)}")
        value = getattr(self, capability)()
        if value is None:
            value = generic_capabilities()(self, capability)
        return value

    def require(self, capability: str, needed_for: str | None = None) -> Any:
        """The capability (the generic one where the domain has none), or a DomainCapabilityError naming the
        domain by where it came from, the capability, and what the generic path lacked to grow it."""
        value = self.capability(capability)
        if value is None:
            reason = generic_gap()(self, capability)
            raise DomainCapabilityError(domain_label(self), capability, needed_for, reason)
        return value

    def provides(self, capability: str) -> bool:
        return self.capability(capability) is not None

    def __repr__(self) -> str:
        return f"<domain {self.name}>"
