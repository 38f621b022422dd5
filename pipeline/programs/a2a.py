"""An agent served over the A2A protocol as an agent program (`a2a:URL`), with the official `a2a-sdk` client.

One episode is one A2A context: `start(episode)` picks a fresh `contextId`, and every customer message of the episode
is a user message in that context. The first message's `metadata` carries the episode, its `ProgramEpisode` fields by
name: `mcp_url` (the episode's tools over MCP), `model_base_url` and `model` (the episode's model proxy, when there is
one), `policy`, `task_id`, `trial`, `seed`; an A2A agent reads them with `episode_from_message(message)`. `respond()`
returns the agent's text: the text parts of its reply message, or of the task's status message (else its artifacts)
when it answers with a task. A task left `input-required` is continued by the next message (its `taskId`); a
completed one ends, and the next message opens a new task in the same context. `close()` ends the context: A2A has no
call that closes a context, so the open task, if any, is cancelled, and the connection is closed.

What the remote agent does wrong is the program's failure (`A2AProgramError`, naming the URL: the harness names it a
program crash): no agent card at the URL, a request it refuses or fails (its server's error), a task that fails or is
rejected, no answer within `timeout` seconds of a turn. Only a connection that cannot be made at all (refused, or not
made within 10 s) is infrastructure (`A2AUnavailableError`): the trial is excluded, not blamed on the program.

    a2a:http://127.0.0.1:9999          the spec form; `a2a_program(url)` is the factory the harness calls
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
import uuid
from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

import httpx

from pipeline.errors import AgentloopError, InfrastructureError, InputError
from pipeline.protocol import ProgramEpisode

try:
    from a2a.client import A2AClientError, Client, ClientConfig, create_client
    from a2a.helpers import get_artifact_text, get_message_text, new_text_message
    from a2a.types import CancelTaskRequest, GetTaskRequest, Message, Role, SendMessageRequest, Task, TaskState
except ImportError as exc:  # the optional extra
    raise InputError(f"a2a: agents need the a2a-sdk ({exc.name} is missing): pip install -e '.[programs]'") from None

SPEC_PREFIX = "a2a:"
_T = TypeVar("_T")
_INTERRUPTED = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})
_FAILED = frozenset({TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED, TaskState.TASK_STATE_CANCELED})
_DONE = _INTERRUPTED | _FAILED | {TaskState.TASK_STATE_COMPLETED}


class A2AProgramError(InputError):
    """The A2A agent failed a turn (refused or failed a request, failed or rejected its task, too slow): the
    program's failure; the message names the URL and what happened."""


class A2AUnavailableError(InfrastructureError):
    """No connection to the A2A agent could be made (refused, or not in time): not the program's answer."""


def a2a_program(url: str, *, timeout: float = 300.0) -> A2AProgram:
    """The factory of `a2a:URL`: one `A2AProgram` for the agent at `url` (also accepted with its `a2a:` prefix)."""
    if isinstance(url, str) and url.startswith(SPEC_PREFIX):
        url = url[len(SPEC_PREFIX) :]
    return A2AProgram(url, timeout=timeout)


def episode_from_message(message: Message | Mapping[str, Any]) -> ProgramEpisode | None:
    """The episode an A2A agent is given, read from the first message of its context (a `Message`, or its metadata
    as a mapping); None when the message carries none (a later message of the context)."""
    metadata = dict(message.metadata.items()) if isinstance(message, Message) else dict(message)
    if "mcp_url" not in metadata:
        return None
    fields = {k: v for k, v in metadata.items() if k in ProgramEpisode.model_fields}
    for number in ("trial", "seed"):  # JSON numbers travel as floats in the protocol's Struct
        if isinstance(fields.get(number), float) and fields[number].is_integer():
            fields[number] = int(fields[number])
    return ProgramEpisode.model_validate(fields)


class A2AProgram:
    """One episode of the A2A agent at `url` (its agent card at `url/.well-known/agent-card.json`)."""

    def __init__(self, url: str, *, timeout: float = 300.0) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise InputError(f"a2a: the agent's URL must be an http(s) URL (a2a:http://HOST:PORT), got {url!r}")
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not timeout > 0:
            raise InputError(f"a2a: timeout must be a positive number of seconds, got {timeout!r}")
        self.url, self.timeout = url.rstrip("/"), float(timeout)
        self.context_id: str | None = None
        self._episode: ProgramEpisode | None = None
        self._task_id: str | None = None
        self._sent = 0
        self._client: Client | None = None
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # ---- the protocol ---------------------------------------------------------------------------------------------
    def start(self, episode: ProgramEpisode) -> None:
        if self._loop is not None:
            raise InputError(f"a2a {self.url}: start() called twice; a program plays one episode")
        self._episode = episode
        self.context_id = f"{episode.task_id}-{episode.trial}-{uuid.uuid4().hex[:12]}"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="a2a-program", daemon=True)
        self._thread.start()
        self._run(self._connect(), "fetch the agent card")

    def respond(self, customer_text: str) -> str:
        if self._client is None or self._episode is None:
            raise InputError(f"a2a {self.url}: respond() before start() or after close()")
        return self._run(self._turn(customer_text), "answer the customer")

    def close(self) -> None:
        if self._loop is None or self._loop.is_closed():
            return
        with contextlib.suppress(Exception):  # closing: a failure to close is moot
            self._run(self._end(), "end the context", timeout=min(self.timeout, 10.0))
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
            if not self._thread.is_alive():
                self._loop.close()
        self._client = None

    # ---- on the private loop --------------------------------------------------------------------------------------
    async def _connect(self) -> None:
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout, connect=min(10.0, self.timeout)))
        self._client = await create_client(self.url, ClientConfig(streaming=False, httpx_client=self._http))

    async def _turn(self, text: str) -> str:
        assert self._client is not None and self._episode is not None
        message = new_text_message(text, context_id=self.context_id, task_id=self._task_id, role=Role.ROLE_USER)
        if self._sent == 0:
            message.metadata.update(self._episode.model_dump(exclude_none=True))
        self._sent += 1
        last = None
        async for event in self._client.send_message(SendMessageRequest(message=message)):
            last = event
        if last is None:
            raise A2AProgramError(f"a2a {self.url}: the agent sent no reply")
        if last.HasField("message"):
            self._task_id = None
            return get_message_text(last.message)
        task = last.task if last.HasField("task") else None
        if task is None:
            raise A2AProgramError(f"a2a {self.url}: the agent's reply is neither a message nor a task")
        task = await self._settled(task)
        state = task.status.state
        self._task_id = task.id if state in _INTERRUPTED else None
        reply = _task_text(task)
        if state in _FAILED:
            name = TaskState.Name(state).removeprefix("TASK_STATE_").lower()
            raise A2AProgramError(f"a2a {self.url}: the agent's task {task.id} ended {name}: {reply or '(no text)'}")
        return reply

    async def _settled(self, task: Task) -> Task:
        """The task once it is completed, failed or waits for input (polled while the agent still works)."""
        assert self._client is not None
        deadline = time.monotonic() + self.timeout
        while task.status.state not in _DONE:
            if time.monotonic() > deadline:
                raise A2AProgramError(f"a2a {self.url}: task {task.id} still working after {self.timeout:g} s")
            await asyncio.sleep(0.2)
            task = await self._client.get_task(GetTaskRequest(id=task.id))
        return task

    async def _end(self) -> None:
        try:
            if self._client is not None and self._task_id is not None:
                with contextlib.suppress(A2AClientError, httpx.HTTPError):
                    await self._client.cancel_task(CancelTaskRequest(id=self._task_id))
            if self._client is not None:
                await self._client.close()
        finally:
            if self._http is not None:
                await self._http.aclose()
            self._task_id = None

    def _run(self, work: Awaitable[_T], what: str, *, timeout: float | None = None) -> _T:
        assert self._loop is not None

        async def guarded() -> _T:
            try:
                return await work
            except AgentloopError:
                raise
            except Exception as exc:  # the SDK's and the transport's errors: named with the URL
                raise _translated(exc, self.url, what) from None

        future = asyncio.run_coroutine_threadsafe(guarded(), self._loop)
        limit = (timeout or self.timeout) + 5
        try:
            return future.result(limit)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise A2AProgramError(f"a2a {self.url}: {what}: no answer in {limit - 5:g} s") from None


def _task_text(task: Task) -> str:
    if task.status.HasField("message"):
        text = get_message_text(task.status.message)
        if text:
            return text
    return "\n".join(t for t in (get_artifact_text(a) for a in task.artifacts) if t)


def _translated(exc: BaseException, url: str, what: str) -> A2AProgramError | A2AUnavailableError:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    detail = " ".join((str(exc).strip() or type(exc).__name__).split())[:300]
    if _no_connection(exc):
        return A2AUnavailableError(f"a2a {url}: {what}: cannot connect: {detail}")
    return A2AProgramError(f"a2a {url}: {what}: {type(exc).__name__}: {detail}")


def _no_connection(exc: BaseException | None) -> bool:
    """Whether `exc` is, or was raised from, a connection that could not be made."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | ConnectionRefusedError):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
