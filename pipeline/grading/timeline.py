"""A trial as one ordered timeline of what was said and what the world did, for the failure-mode rules.

Tool calls are taken from the world's own log (`Trajectory.world_log`, one event per call in call order),
which says whether each call succeeded and who was authenticated when it ran; a trajectory imported without
a log falls back to its tool messages. Each step keeps its message index so rules can ask what came before.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pipeline.rollout import STOP_TOKEN, Trajectory

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Say:
    """A user or assistant text message."""

    pos: int
    role: Literal["user", "assistant"]
    text: str


@dataclass(frozen=True)
class Step:
    """One tool call as the world saw it."""

    pos: int
    name: str
    arguments: dict[str, Any]
    kind: str  # a ToolKind: read | write | identity | transfer | generic
    ok: bool
    content: str  # what the agent saw: the result, or the error text
    error_category: str | None = None
    authenticated: bool | None = None  # whether a customer was authenticated when it ran (None: unknown)
    touched: tuple[tuple[str, str], ...] = ()

    @property
    def is_write(self) -> bool:
        return self.kind == "write"

    def record(self) -> dict[str, Any] | None:
        """The JSON object a successful call returned, if it returned one."""
        if not self.ok or not self.content.startswith("{"):
            return None
        try:
            data = json.loads(self.content)
        except json.JSONDecodeError:
            return None
        return data if isinstance(data, dict) else None

    def label(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.arguments.items())
        return f"{self.name}({args if len(args) <= 100 else args[:97] + '...'})"


@dataclass
class Timeline:
    items: list[Say | Step] = field(default_factory=list)
    termination: str = "agent_stop"

    @property
    def steps(self) -> list[Step]:
        return [i for i in self.items if isinstance(i, Step)]

    @property
    def said(self) -> list[Say]:
        return [i for i in self.items if isinstance(i, Say)]


def _clean(text: str) -> str:
    return text.replace(STOP_TOKEN, "").strip()


def build_timeline(trajectory: Trajectory) -> Timeline:
    """Messages and the world log (the agent's own calls: a customer's calls, with dual control, are not the
    agent's), merged into one ordered list."""
    events = [e for e in trajectory.world_log if e.get("requestor", "assistant") == "assistant"]
    n_calls = sum(len(m.tool_calls) for m in trajectory.messages if m.role == "assistant")
    use_log = len(events) == n_calls and n_calls > 0
    if n_calls and not use_log:
        log.debug(
            "trajectory %s: %d log events for %d calls; using tool messages", trajectory.task_id, len(events), n_calls
        )
    answers = {m.tool_call_id: m for m in trajectory.messages if m.role == "tool"}
    items: list[Say | Step] = []
    k = 0
    for pos, msg in enumerate(trajectory.messages):
        if msg.role in ("user", "assistant") and not msg.tool_calls and msg.content and _clean(msg.content):
            items.append(Say(pos, msg.role, _clean(msg.content)))
        if msg.role != "assistant":
            continue
        for call in msg.tool_calls:
            if use_log:
                e = events[k]
                ok = bool(e.get("ok"))
                items.append(
                    Step(
                        pos=pos,
                        name=e.get("name", call.name),
                        arguments=dict(e.get("arguments") or {}),
                        kind=e.get("kind", "generic"),
                        ok=ok,
                        content=(e.get("result") or "") if ok else f"Error: {e.get('error')}",
                        error_category=e.get("error_category"),
                        authenticated=e.get("authenticated_user_id") is not None,
                        touched=tuple(tuple(t) for t in e.get("touched") or ()),
                    )
                )
            else:
                answer = answers.get(call.id)
                spec = _tools(trajectory).tools.get(call.name)
                error = answer is None or answer.error
                items.append(
                    Step(
                        pos=pos,
                        name=call.name,
                        arguments=dict(call.arguments or {}),
                        kind=spec.kind if spec else "generic",
                        ok=not error,
                        content=(answer.content or "") if answer else "Error: no tool result recorded",
                        error_category=_guess_category(answer.content if answer else None) if error else None,
                    )
                )
            k += 1
    return Timeline(items, trajectory.termination)


def _tools(trajectory: Trajectory):
    """The tool registry of the trajectory's domain (for kinds, when a trajectory carries no world log)."""
    from pipeline.world import resolve_domain

    return resolve_domain(trajectory.domain).tools


_CATEGORY = (
    ("malformed_arguments", re.compile(r"could not parse the arguments")),
    ("not_found", re.compile(r"not found")),
    ("unauthorized", re.compile(r"authenticated|another customer")),
)


def _guess_category(text: str | None) -> str | None:
    """Best-effort refusal category from an error text (only for trajectories without a world log)."""
    for name, pattern in _CATEGORY:
        if text and pattern.search(text):
            return name
    return None
