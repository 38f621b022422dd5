"""Tool registration and execution, for any domain: a function's signature and docstring become the schema the
model sees, and `execute` runs one call atomically against a session and logs it.

As in τ²-bench, a tool's docstring is its description and its `Args:` section documents each parameter.
Arguments are validated by pydantic before the tool body runs, so a malformed call is a tool error the
agent can read, never a crash, and a refused call changes nothing. A call whose writes would break one of the
domain's invariants is refused and undone too, so no tool can leave the world in a state its rules forbid. Once a
call of kind "transfer" succeeds the conversation belongs to a human agent: every later write is refused (category
"transferred"), in any domain.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from pipeline.errors import InfrastructureError, WorldError
from pipeline.world.bounds import bounds_for, call_tool
from pipeline.world.domain import StaticInput
from pipeline.world.origin import domain_label
from pipeline.world.tables import ToolEvent

if TYPE_CHECKING:
    from pipeline.world.tables import Session

# read: looks something up; write: changes records; identity: establishes who the customer is (and may look up);
# transfer: hands the conversation to a human; generic: neither reads nor writes the world (calculate).
ToolKind = Literal["read", "write", "identity", "transfer", "generic"]
TOOL_KINDS: tuple[str, ...] = ToolKind.__args__  # type: ignore[attr-defined]


TRANSFERRED = "transferred"  # the error category of a write refused because the conversation was handed over
WRITES: frozenset[str] = frozenset({"write"})
"""The kinds of tool that may change records; a call of any other kind that does is refused (`keep_read_only`)."""


class ReadOnlyError(InfrastructureError):
    """A tool declared as not writing (a read, an identity look-up...) changed records: the domain's fault, never the
    agent's. The change is undone and the trial is lost to infrastructure (retried, then left out)."""


class ToolError(WorldError):
    """A refusal: the tool ran, found the request not allowed or not possible, and changed nothing."""

    def __init__(self, message: str, category: str = "precondition") -> None:
        super().__init__(message)
        self.category = category


@dataclass(frozen=True)
class ToolSpec:
    name: str
    func: Callable[..., Any]
    kind: ToolKind
    private: bool
    description: str
    args_model: type[BaseModel]

    def json_schema(self) -> dict:
        """OpenAI-style function schema (a fresh copy: every episode hands the schemas to its agent)."""
        return copy.deepcopy(self._schema)

    @functools.cached_property
    def _schema(self) -> dict:
        params = self.args_model.model_json_schema()  # milliseconds per tool: built once per tool
        params.pop("title", None)
        params.setdefault("required", [])  # always present, even for a tool without parameters
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }

    def validate(self, arguments: Any) -> dict:
        if not isinstance(arguments, dict):
            raise ToolError(
                f"arguments for {self.name} must be a JSON object, got {type(arguments).__name__}",
                "invalid_arguments",
            )
        try:
            parsed = self.args_model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
            )
            raise ToolError(f"invalid arguments for {self.name}: {problems}", "invalid_arguments") from None
        return {k: getattr(parsed, k) for k in type(parsed).model_fields}


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    doc = inspect.cleandoc(doc or "")
    head, _, rest = doc.partition("Args:")
    descriptions: dict[str, str] = {}
    current = None
    for line in rest.splitlines():
        if line.strip() and not line[0].isspace():  # the next section ("Returns:", "Raises:") ends Args
            break
        m = re.match(r"\s*(\w+)(?: \([^)]*\))?:\s*(.*)", line)
        if m and not line.startswith("        "):
            current = m.group(1)
            descriptions[current] = m.group(2).strip()
        elif current and line.strip():
            descriptions[current] += " " + line.strip()
    desc = head.split("Returns:")[0].strip()
    return desc, descriptions


def make_tool(func: Callable[..., Any], kind: ToolKind, private: bool) -> ToolSpec:
    """Build a ToolSpec from `func(session, **arguments)`."""
    description, arg_docs = _parse_docstring(func.__doc__ or "")
    fields: dict[str, Any] = {}
    params = list(inspect.signature(func).parameters.values())[1:]  # drop the session
    hints = inspect.get_annotations(func, eval_str=True)
    for p in params:
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (hints[p.name], Field(default, description=arg_docs.get(p.name)))
    model = create_model(
        f"{func.__name__}_args",
        __config__=ConfigDict(extra="forbid", strict=True),
        **fields,
    )
    return ToolSpec(func.__name__, func, kind, private, description, model)


class ToolRegistry:
    """The tools of one domain, in a stable order."""

    tools: dict[str, ToolSpec]
    """Name → spec (a domain's shape is checked against this when it is loaded)."""

    def __init__(self) -> None:
        self.tools: dict[str, ToolSpec] = {}

    def register(self, kind: ToolKind, private: bool = False) -> Callable:
        def deco(func: Callable) -> Callable:
            self.tools[func.__name__] = make_tool(func, kind, private)
            return func

        return deco

    def schemas(self) -> list[dict]:
        return [t.json_schema() for t in self.tools.values()]

    def __contains__(self, name: str) -> bool:
        return name in self.tools

    def __getitem__(self, name: str) -> ToolSpec:
        return self.tools[name]

    def of_kind(self, *kinds: str) -> frozenset[str]:
        """Names of the tools of the given kinds."""
        return frozenset(n for n, t in self.tools.items() if t.kind in kinds)


def keep_invariants(s: Session, name: str) -> None:
    """Refuse the call in progress when its writes break one of the domain's invariants (`Domain.invariants`: legal
    transitions, balances, seats, money ceilings) that held before it: whatever a tool's own checks miss, the world
    never enters a state its rules forbid. Only the records the call touched are checked, before and after."""
    before, after = s.call_changes()
    if not any(after.values()):
        return
    for inv in s.world.domain.invariants():
        if not inv.enforced:
            continue
        broken = inv.check(StaticInput(s.world, [], after))
        if broken.passed:
            continue
        new = [d for d in broken.details if d not in set(inv.check(StaticInput(s.world, [], before)).details)]
        if new:
            raise ToolError(f"{name} refused: the change would break the rule {inv.name!r}: {'; '.join(new)}")


def keep_read_only(s: Session, name: str, kind: str) -> None:
    """Refuse a call of a kind that does not write (`WRITES`) when it changed records: a "read" that edits would slip
    past every rule kept for writes (the lock after a transfer among them). Costs nothing when it touched none."""
    if not s._edited_this_call:
        return
    before, after = s.call_changes()
    if before == after:
        return
    table, key = next((t, k) for t in after for k in {**before[t], **after[t]} if before[t].get(k) != after[t].get(k))
    raise ReadOnlyError(
        f"tool {name!r} of domain {domain_label(s.world.domain)!r} is declared {kind!r} but changed {table}/{key};"
        f" only a tool of kind {' or '.join(sorted(WRITES))} may change records (the change was undone)"
    )


def execute(s: Session, name: str, arguments: Any, requestor: str = "assistant") -> ToolEvent:
    """Run one tool call of the session's world against it, atomically, and append it to the world's log.

    `requestor` is the side that makes the call: the agent ("assistant") or, in a domain with dual control, the
    customer ("user"); only that side's tools exist for it. The domain's synchronisation runs after the call.
    Returns the logged event; `event.ok` tells success, `event.content` what the caller sees.
    """
    tools = s.world.tools_of(requestor)
    spec = tools.tools.get(name) if tools is not None else None
    kind = spec.kind if spec else "generic"
    event = ToolEvent(
        step=len(s.log),
        name=name,
        arguments=arguments if isinstance(arguments, dict) else {},
        kind=kind,
        ok=False,
        authenticated_user_id=s.authenticated_user_id,
        requestor=requestor,
    )
    s.check_usable()
    bounds = bounds_for(s.world.domain)
    transferred = s.transferred
    s.begin_call()
    try:
        if spec is None:
            available = ", ".join(tools.tools) if tools is not None else "none"
            raise ToolError(f"unknown tool {name!r}; available tools: {available}", "invalid_arguments")
        if kind == "write" and transferred and s.authorize and requestor == "assistant":
            raise ToolError(
                f"cannot run {name}: this conversation was transferred to a human agent; no change can be made"
                " after a transfer",
                TRANSFERRED,
            )
        args = spec.validate(arguments)
        event.result = call_tool(s, name, spec.func, args, bounds)
        if kind not in WRITES:
            keep_read_only(s, name, kind)
        keep_invariants(s, name)
        event.ok = True
        event.touched = s.commit_call()
        if kind == "transfer":
            s.transferred = True
    except ToolError as exc:
        s.rollback_call()
        s.transferred = transferred
        event.error, event.error_category = str(exc), exc.category
    except InfrastructureError:  # the environment behind the tool is unreachable: not the agent's doing
        s.rollback_call()
        s.transferred = transferred
        raise
    except Exception as exc:  # a bug in a tool must not corrupt the episode  # noqa: BLE001
        s.rollback_call()
        s.transferred = transferred
        event.error, event.error_category = f"internal error in {name}: {exc}", "internal"
    synced = synchronise(s)
    if synced:
        event.touched = sorted(set(event.touched) | set(synced))
    s.log.append(event)
    return event


def synchronise(s: Session) -> list[tuple[str, str]]:
    """The domain's synchronisation step, atomically; the records it changed. A failure changes nothing and is
    raised: the two sides no longer agree, which no episode may go on from."""
    domain = s.world.domain
    if not s.world.domain.user_tables:
        return []
    s.begin_call()
    try:
        domain.synchronise(s)
    except Exception:
        s.rollback_call()
        raise
    return s.commit_call()
