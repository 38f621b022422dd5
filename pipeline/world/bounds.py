"""Each tool call of a plug-in domain bounded in time and in the size of its result.

A domain the package does not ship (`module:attribute`, an environment behind the protocol) is code the loop does
not know: a tool that never returns would hang `measure`, `tasks generate` and `world explore`, and a result of
50 MB would be written into every trajectory. So its calls are bounded, at the one place every tool call goes
through (`pipeline.world.tools.execute`, and a task's set-up actions):

- **time**: the call runs on a worker thread (one per calling thread, kept while it has work) and the caller
  waits `AGENTLOOP_TOOL_TIMEOUT_S` seconds (default 30).
  A call past it is abandoned (Python cannot stop a thread; the thread is a daemon, so it never keeps the process
  alive), its session is marked unusable (the thread may still write to it; any later call or write on it fails),
  and `ToolTimeoutError` names the tool and the bound. While an abandoned call of a tool still runs, that tool's
  calls fail at once (one stray thread per tool, however many trials meet it).
- **size**: a result longer than `AGENTLOOP_TOOL_RESULT_CHARS` characters (default 1,000,000), or not a string,
  is refused (`ToolResultError`) before it is logged: nothing of it reaches the trajectory or the run folder.

Both are infrastructure errors: the trial is retried (at most the run's `--retries`) and then left out of the
metrics, never counted against the agent. The built-in domains' tools run inline, unbounded, as before: their
outputs are byte-for-byte unchanged.
"""

from __future__ import annotations

import contextvars
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.errors import InfrastructureError, InputError
from pipeline.world.origin import domain_label, is_builtin

if TYPE_CHECKING:
    from pipeline.world.tables import Session

TIMEOUT_VAR, RESULT_VAR = "AGENTLOOP_TOOL_TIMEOUT_S", "AGENTLOOP_TOOL_RESULT_CHARS"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_RESULT_CHARS = 1_000_000


class ToolBoundError(InfrastructureError):
    """A plug-in domain's tool call past one of its bounds: the domain's fault, never the agent's."""

    def __init__(self, message: str, tool: str, bound: str) -> None:
        super().__init__(message)
        self.tool, self.bound = tool, bound


class ToolTimeoutError(ToolBoundError, TimeoutError):
    """A tool call that did not return within its time bound (abandoned; its session is not used again)."""


class ToolResultError(ToolBoundError):
    """A tool result over its size bound, or not a string."""


@dataclass(frozen=True)
class ToolBounds:
    timeout_s: float = DEFAULT_TIMEOUT_S
    result_chars: int = DEFAULT_RESULT_CHARS


def tool_bounds() -> ToolBounds:
    """The bounds the environment sets (`AGENTLOOP_TOOL_TIMEOUT_S`, `AGENTLOOP_TOOL_RESULT_CHARS`), else defaults."""
    return ToolBounds(
        _number(TIMEOUT_VAR, float, DEFAULT_TIMEOUT_S),
        int(_number(RESULT_VAR, int, DEFAULT_RESULT_CHARS)),
    )


def _number(var: str, kind: Callable[[str], float], default: float) -> float:
    raw = os.environ.get(var, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = 0
    if not value > 0 or value != value or value == float("inf"):
        raise InputError(f"{var}={raw!r}: expected a positive finite {kind.__name__}")
    return value


_abandoned: dict[tuple[str, str], _Job] = {}  # (domain, tool) → its abandoned call, while it runs
_abandoned_lock = threading.Lock()


def bounds_for(domain: Any) -> ToolBounds | None:
    """The bounds of `domain`'s tool calls: None (unbounded) for a built-in domain. Read before a call runs, so a
    bad setting is refused as the input it is, not taken for the tool's failure."""
    return None if is_builtin(domain) else tool_bounds()


def call_tool(session: Session, name: str, func: Callable[..., Any], arguments: dict, bounds: ToolBounds | None) -> Any:
    """`func(session, **arguments)`: inline without bounds (a built-in domain's), within them otherwise."""
    if bounds is None:
        return func(session, **arguments)
    domain = session.world.domain
    label = domain_label(domain)
    result = _in_time(session, (label, name), func, arguments, bounds.timeout_s)
    if not isinstance(result, str):
        raise ToolResultError(
            f"tool {name!r} of domain {label!r} returned a {type(result).__name__}, not a string", name, "result"
        )
    if len(result) > bounds.result_chars:
        raise ToolResultError(
            f"tool {name!r} of domain {label!r} returned {len(result):,} characters, over the bound of"
            f" {bounds.result_chars:,} ({RESULT_VAR}); the result was not kept",
            name,
            RESULT_VAR,
        )
    return result


def _in_time(session: Session, key: tuple[str, str], func: Callable[..., Any], arguments: dict, limit: float) -> Any:
    label, name = key
    with _abandoned_lock:
        stray = _abandoned.get(key)
        if stray is not None and stray.done.is_set():
            del _abandoned[key]
            stray = None
    if stray is not None:
        raise ToolTimeoutError(
            f"tool {name!r} of domain {label!r}: an earlier call is still running past the bound of {limit:g} s"
            f" ({TIMEOUT_VAR}); not called again until it ends",
            name,
            TIMEOUT_VAR,
        )
    job = _Job(func, session, arguments)
    worker = getattr(_local, "worker", None)
    if worker is None or not worker.submit(job):
        worker = _local.worker = _Worker()
        worker.submit(job)
    if not job.done.wait(limit):
        session.unusable = f"tool {name!r} was abandoned past its time bound"
        _local.worker = None  # the worker is stuck in the call: the next call gets a fresh one
        with _abandoned_lock:
            _abandoned[key] = job
        raise ToolTimeoutError(
            f"tool {name!r} of domain {label!r} did not return within {limit:g} s ({TIMEOUT_VAR}); the call was"
            " abandoned and its episode's session is not used again",
            name,
            TIMEOUT_VAR,
        )
    if job.error is not None:
        raise job.error
    return job.value


class _Job:
    """One call handed to a worker: the caller's context variables go with it, as an inline call would see them."""

    def __init__(self, func: Callable[..., Any], session: Session, arguments: dict) -> None:
        self.func, self.session, self.arguments = func, session, arguments
        self.context = contextvars.copy_context()
        self.done = threading.Event()
        self.value: Any = None
        self.error: Exception | None = None

    def __call__(self) -> None:
        try:
            self.value = self.context.run(self.func, self.session, **self.arguments)
        except Exception as exc:  # noqa: BLE001 - handed to the caller, which treats it as an inline call's
            self.error = exc
        except BaseException as exc:  # noqa: BLE001 - sys.exit() in a tool is the tool's bug, not the process's end
            self.error = RuntimeError(f"{type(exc).__name__}: {exc}")
        finally:
            self.done.set()


class _Worker:
    """The daemon thread a calling thread's plug-in tool calls run on, one at a time (a thread per call costs
    ~100 µs more); it ends after `IDLE_S` without work, and is abandoned with a call past its bound."""

    IDLE_S = 10.0

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.alive = True
        self.thread = threading.Thread(target=self._loop, name="plug-in tool calls", daemon=True)
        self.thread.start()

    def submit(self, job: _Job) -> bool:
        with self.lock:
            if self.alive:
                self.jobs.put(job)
            return self.alive

    def _loop(self) -> None:
        while True:
            try:
                job = self.jobs.get(timeout=self.IDLE_S)
            except queue.Empty:
                with self.lock:
                    if self.jobs.empty():
                        self.alive = False
                        return
                continue
            job()


_local = threading.local()  # each calling thread's worker
