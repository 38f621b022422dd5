"""Each episode's agent-side tools as an MCP server (the official `mcp` SDK, streamable HTTP), and a synchronous
client that drives an episode through them.

`mcp_app(lookup)` is one stateless ASGI handler for every episode. Routed at `/episodes/{episode_id}/mcp` (as
`agentloop env serve` routes it), it serves the episode its URL names: `lookup(episode_id)` gives the episode's
environment, or None for an unknown or closed one, which is answered HTTP 404 with a JSON-RPC error naming the id
before the MCP layer sees the request. Nothing is keyed on the `Mcp-Session-Id`: the episode is the URL, and no
MCP session state outlives a request (stateless mode, JSON responses; both the handshake era and the 2026 per-request
era of the protocol are served).

- `tools/list`: the episode's agent-side tools only, `get_metadata().tools` (OpenAI-style function schemas) as MCP
  tools: name, description, `inputSchema` = the function's parameters, and hints from the tool's kind (a read is
  read-only, a write destructive). Never the customer's tools (`user_tools`), the gold or the state.
- `tools/call`: `env.run({"name", "arguments"}, "assistant")`, always on the agent's side, so a customer's tool or
  an unknown name is refused by the environment as it would refuse it in process. A refused call (`error=True`) is
  an MCP tool error (`isError: true`) carrying the tool's message as text; a success carries the tool's output as
  text. The refusal's category rides in the result's `_meta` under `agentloop/category`. A call the environment
  itself rejects as malformed (an `AgentloopError`, e.g. the episode not started) is a tool error with its message.

Delivery is at least once: a client that retries a call after a lost response makes the environment execute it
twice, and a write is executed as the environment executes any repeated write (no deduplication here). The
episode's ledger, `calls()`, is the authority on what was executed. Calls to one episode run one at a time, in a
worker thread, so an environment that blocks (SQL against a database) holds up no other episode.

`McpEnvironmentClient(url)` is what a scripted agent (and the benchmark) uses: `list_tools()` and
`call(name, arguments) -> ToolResult`, synchronous, over one SDK client held open on a private event-loop thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.client import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from starlette.types import ASGIApp, Receive, Scope, Send

from pipeline.errors import AgentloopError, InfrastructureError, InputError
from pipeline.protocol import EnvironmentProtocol, ToolResult, as_model

EPISODE_PARAM = "episode_id"
"""The path parameter naming the episode (`/episodes/{episode_id}/mcp`)."""
CATEGORY_META = "agentloop/category"
"""The `_meta` key of a refused call's category (invalid_arguments, not_found, precondition, …)."""
SERVER_NAME = "agentloop-environment"
_SCOPE_KEY = "agentloop.episode"
_INFRASTRUCTURE_CODES = frozenset({types.INTERNAL_ERROR, types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT})
"""JSON-RPC errors that say the server or the connection failed, not that the request was wrong."""

_T = TypeVar("_T")


class McpRequestError(InputError):
    """An MCP server refused a request (an unknown or closed episode, a method it does not serve); the message names
    the URL and the server's reason."""


class McpUnavailableError(InfrastructureError):
    """The MCP server could not be reached, failed (a 5xx, an internal error) or timed out: not the agent's fault."""


# ---- the server ---------------------------------------------------------------------------------------------------
def mcp_app(lookup: Callable[[str], EnvironmentProtocol | None]) -> ASGIApp:
    """The ASGI app serving each episode's agent-side tools over MCP (see the module docstring), for the path
    `/episodes/{episode_id}/mcp`: `Route("/episodes/{episode_id}/mcp", mcp_app(lookup))` (a Starlette `Mount` there
    answers the URL without a trailing slash with a redirect first). `lookup(episode_id)` is the episode's
    environment, or None when there is none."""
    return _EpisodeMcp(lookup)


class _EpisodeMcp:
    def __init__(self, lookup: Callable[[str], EnvironmentProtocol | None]) -> None:
        if not callable(lookup):
            raise InputError(f"mcp_app: lookup must be a function episode_id -> environment or None, got {lookup!r}")
        self.lookup = lookup
        self.server: Server[Any] = Server(
            SERVER_NAME,
            description="One episode's agent-side tools.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            # the tools declare no Mcp-Param headers: nothing to check, and no tools/list behind every call
            get_tool_input_schema=lambda name: None,
        )
        self._tools: weakref.WeakKeyDictionary[Any, list[types.Tool]] = weakref.WeakKeyDictionary()
        self._locks: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()
        self._guard = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        episode_id = scope.get("path_params", {}).get(EPISODE_PARAM)
        if not isinstance(episode_id, str) or not episode_id:
            await _not_found(f"no episode in the path {scope.get('path')!r}: the MCP URL is /episodes/{{id}}/mcp", send)
            return
        env = self.lookup(episode_id)
        if env is None:
            await _not_found(f"unknown or closed episode {episode_id!r}", send)
            return
        # stateless: a fresh transport per request, over the episode this request's URL names
        manager = StreamableHTTPSessionManager(self.server, json_response=True, stateless=True)
        async with manager.run():
            await manager.handle_request({**scope, _SCOPE_KEY: (episode_id, env)}, receive, send)

    # ---- the handlers -------------------------------------------------------------------------------------------
    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        _, env = _episode(ctx)
        return types.ListToolsResult(tools=await anyio.to_thread.run_sync(self._agent_tools, env))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        _, env = _episode(ctx)
        call = {"name": params.name, "arguments": dict(params.arguments or {})}
        try:
            result = await anyio.to_thread.run_sync(self._run, env, call)
        except AgentloopError as exc:
            return _text_result(str(exc), error=True)
        return _text_result(result.content, error=result.error, category=result.category)

    # ---- per environment: its tools (computed once), one call at a time -----------------------------------------
    def _agent_tools(self, env: EnvironmentProtocol) -> list[types.Tool]:
        try:
            with self._guard:
                cached = self._tools.get(env)
        except TypeError:  # an environment that cannot be weakly referenced: nothing is cached
            return _tools(env)
        if cached is None:
            cached = _tools(env)
            with self._guard:
                self._tools[env] = cached
        return cached

    def _run(self, env: EnvironmentProtocol, call: dict[str, Any]) -> ToolResult:
        with self._lock(env):
            return as_model(ToolResult, env.run(call, "assistant"))

    def _lock(self, env: EnvironmentProtocol) -> threading.Lock:
        with self._guard:
            try:
                lock = self._locks.get(env)
                if lock is None:
                    lock = self._locks[env] = threading.Lock()
            except TypeError:  # not weakly referenceable: calls are not serialised here
                lock = threading.Lock()
            return lock


def _episode(ctx: ServerRequestContext[Any]) -> tuple[str, EnvironmentProtocol]:
    request = ctx.request
    scope = getattr(request, "scope", None)
    if not isinstance(scope, Mapping) or _SCOPE_KEY not in scope:
        raise MCPError(code=types.INVALID_REQUEST, message="no episode: the MCP URL is /episodes/{id}/mcp")
    episode: tuple[str, EnvironmentProtocol] = scope[_SCOPE_KEY]
    return episode


def _tools(env: EnvironmentProtocol) -> list[types.Tool]:
    """The environment's agent-side tools (`get_metadata().tools`, OpenAI-style) as MCP tools."""
    metadata = env.get_metadata()
    kinds = metadata.tool_kinds
    tools = []
    for schema in metadata.tools:
        function = schema.get("function", schema)
        name = function["name"]
        kind = kinds.get(name)
        tools.append(
            types.Tool(
                name=name,
                description=function.get("description"),
                input_schema=function.get("parameters") or {"type": "object", "properties": {}},
                annotations=types.ToolAnnotations(
                    read_only_hint=kind == "read", destructive_hint=kind == "write", open_world_hint=False
                )
                if kind is not None
                else None,
            )
        )
    return tools


def _text_result(text: str, *, error: bool, category: str | None = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        is_error=error,
        meta={CATEGORY_META: category} if category is not None else None,
    )


async def _not_found(message: str, send: Send) -> None:
    """HTTP 404 with a JSON-RPC error body (no request id): what an MCP client shows as the error's message."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": types.INVALID_REQUEST, "message": message}})
    await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body.encode()})


async def _lifespan(receive: Receive, send: Send) -> None:
    """Served on its own (not mounted), the app has nothing to start or stop."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


# ---- the client ---------------------------------------------------------------------------------------------------
class McpEnvironmentClient:
    """One episode's agent-side tools over MCP, from synchronous code: `list_tools()` and `call(name, arguments)`.

    `url` is the episode's MCP URL (`http://HOST:PORT/episodes/ID/mcp`). The SDK's client is held open on a private
    event loop in a daemon thread; `close()` (or leaving a `with` block) ends it. A refused call is a `ToolResult`
    with `error=True`, as in process; a server that refuses the request itself (an unknown or closed episode) raises
    `McpRequestError`; one that cannot be reached, fails or times out (`timeout` seconds a request) raises
    `McpUnavailableError`. Calls may come from several threads.

    >>> McpEnvironmentClient("ftp://example")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pipeline.errors.InputError: McpEnvironmentClient: url must be an http(s) URL ...
    """

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise InputError(
                f"McpEnvironmentClient: url must be an http(s) URL of an episode's MCP server, got {url!r}"
            )
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not timeout > 0:
            raise InputError(f"McpEnvironmentClient: timeout must be a positive number of seconds, got {timeout!r}")
        self.url, self.timeout = url, float(timeout)
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-client", daemon=True)
        self._thread.start()
        opened: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._held = asyncio.run_coroutine_threadsafe(self._hold(opened), self._loop)
        try:
            opened.result(self.timeout * 2 + 5)
        except BaseException as exc:
            self._shut()
            if isinstance(exc, concurrent.futures.TimeoutError):
                raise McpUnavailableError(f"MCP server {url}: no answer to the handshake in time") from None
            raise

    async def _hold(self, opened: concurrent.futures.Future[None]) -> None:
        """Open the SDK client, report it open, hold it until `close()`; an error opening it goes to `opened`."""
        self._stop = asyncio.Event()
        try:
            async with Client(self.url, read_timeout_seconds=self.timeout) as client:
                self._client = client
                opened.set_result(None)
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - handed to the opening thread, translated
            if not opened.done():
                opened.set_exception(_translated(exc, self.url, "connect"))
        finally:
            self._client = None

    def list_tools(self) -> list[dict[str, Any]]:
        """The episode's agent-side tools as OpenAI-style function schemas (the shape of `get_metadata().tools`)."""

        async def listed(client: Client) -> list[dict[str, Any]]:
            result = await client.list_tools(cache_mode="refresh")
            return [_function_schema(tool) for tool in result.tools]

        return self._do(listed, "tools/list")

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Call the agent-side tool `name`; what it returned (a refusal: `error=True` with the tool's message)."""
        if not isinstance(name, str) or not name:
            raise InputError(f"McpEnvironmentClient.call: name must be a tool name (a string), got {name!r}")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise InputError(f"McpEnvironmentClient.call {name!r}: arguments must be an object, got {arguments!r}")

        async def called(client: Client) -> ToolResult:
            result = await client.call_tool(name, dict(arguments or {}))
            text = "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))
            category = (result.meta or {}).get(CATEGORY_META)
            return ToolResult(
                content=text,
                error=bool(result.is_error),
                category=category if isinstance(category, str) and result.is_error else None,
            )

        return self._do(called, f"tools/call {name!r}")

    def close(self) -> None:
        """End the SDK client and its thread; calling it twice is harmless."""
        if self._loop.is_closed():
            return
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        with contextlib.suppress(Exception, concurrent.futures.CancelledError):  # closing: a failure to close is moot
            self._held.result(self.timeout)
        self._shut()

    def __enter__(self) -> McpEnvironmentClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _do(self, work: Callable[[Client], Awaitable[_T]], what: str) -> _T:
        client = self._client
        if client is None or self._loop.is_closed():
            raise McpRequestError(f"MCP server {self.url}: {what} after close()")

        async def run() -> _T:
            try:
                return await work(client)
            except BaseException as exc:
                raise _translated(exc, self.url, what) from None

        future = asyncio.run_coroutine_threadsafe(run(), self._loop)
        try:
            return future.result(self.timeout + 5)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise McpUnavailableError(f"MCP server {self.url}: {what}: no answer in {self.timeout:g} s") from None

    def _shut(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()


def _function_schema(tool: types.Tool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        function["description"] = tool.description
    function["parameters"] = tool.input_schema
    return {"type": "function", "function": function}


def _translated(exc: BaseException, url: str, what: str) -> BaseException:
    """The error a caller of the client sees for `exc` (the SDK's task groups wrap it in exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, AgentloopError):
        return exc
    if isinstance(exc, MCPError):
        kind = McpUnavailableError if exc.code in _INFRASTRUCTURE_CODES else McpRequestError
        return kind(f"MCP server {url}: {what}: {exc.message}")
    if isinstance(exc, TimeoutError):
        return McpUnavailableError(f"MCP server {url}: {what}: timed out")
    if isinstance(exc, OSError) or type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "anyio"):
        return McpUnavailableError(f"MCP server {url}: {what}: {type(exc).__name__}: {exc}".rstrip(": "))
    return exc
