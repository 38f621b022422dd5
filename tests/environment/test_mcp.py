"""Each episode's agent-side tools over MCP, driven by the official SDK's own client against a real uvicorn server:
the tools listed are exactly the agent's, a read and a write go through `run` and change that episode's state and
no other, a refusal is an MCP tool error with the tool's message, an unknown or closed episode is a 404 naming it,
and a customer's tool is never served."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import httpx
import mcp_types as types
import pytest
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.routing import Mount, Route

from pipeline.environment import Environment, McpEnvironmentClient, mcp_app
from pipeline.environment.mcp import CATEGORY_META, McpRequestError, McpUnavailableError
from pipeline.errors import InfrastructureError, InputError
from pipeline.protocol import EnvironmentMetadata, ToolResult

WORLD = ("retail", "gen-3")
ORDER, USER, EMAIL = "#W0006740", "olivia_schmidt_0627", "olivia.schmidt0685@example.com"  # a pending order
ROUTE = "/episodes/{episode_id}/mcp"


class Server:
    """A real uvicorn on 127.0.0.1 serving `mcp_app` over `episodes` (a dict the tests add to and remove from).

    A `Route`, not a `Mount`: a mount answers `/episodes/ID/mcp` with a redirect to `/episodes/ID/mcp/`."""

    def __init__(self) -> None:
        self.episodes: dict[str, Environment] = {}
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        served = mcp_app(self.episodes.get)
        app = Starlette(routes=[Route(ROUTE, served), Mount("/mounted/{episode_id}/mcp", app=served)])
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def url(self, episode_id: str, at: str = "episodes") -> str:
        return f"http://127.0.0.1:{self.port}/{at}/{episode_id}/mcp"

    def open(self, episode_id: str, domain: str = WORLD[0], world: str = WORLD[1], **init: Any) -> Environment:
        env = Environment(domain, world)
        env.init(**init)
        self.episodes[episode_id] = env
        return env


@pytest.fixture(scope="module")
def served() -> Iterator[Server]:
    server = Server()
    server.thread.start()
    deadline = time.time() + 20
    while not server.server.started and time.time() < deadline:
        time.sleep(0.05)
    assert server.server.started, "uvicorn did not start"
    yield server
    server.server.should_exit = True
    server.thread.join(10)


def sdk(url: str, work: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    """`work` on an SDK session (streamable HTTP, the initialize handshake) with the episode at `url`."""

    async def run() -> Any:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)

    return asyncio.run(run())


def text(result: types.CallToolResult) -> str:
    assert [part.type for part in result.content] == ["text"]
    return result.content[0].text


def first_error(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def test_the_tools_listed_are_exactly_the_agents(served):
    env = served.open("list")
    listed = sdk(served.url("list"), lambda s: s.list_tools()).tools
    metadata = env.get_metadata()
    functions = [schema["function"] for schema in metadata.tools]
    assert [tool.name for tool in listed] == [f["name"] for f in functions]
    for tool, function in zip(listed, functions, strict=True):
        assert tool.description == function["description"]
        assert tool.input_schema == function["parameters"]
        kind = metadata.tool_kinds[tool.name]
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint == (kind == "read")
        assert tool.annotations.destructive_hint == (kind == "write")


def test_a_read_and_a_write_change_this_episode_and_no_other(served):
    mine, other = served.open("mine"), served.open("other")
    twin = Environment(*WORLD)
    twin.init()
    before = other.state()

    async def work(session: ClientSession) -> list[types.CallToolResult]:
        return [
            await session.call_tool("find_user_id_by_email", {"email": EMAIL}),
            await session.call_tool("get_order_details", {"order_id": ORDER}),
            await session.call_tool("cancel_pending_order", {"order_id": ORDER, "reason": "no longer needed"}),
        ]

    identity, read, write = sdk(served.url("mine"), work)
    assert not identity.is_error and not read.is_error and not write.is_error
    twin.run({"name": "find_user_id_by_email", "arguments": {"email": EMAIL}})
    assert text(read) == twin.run({"name": "get_order_details", "arguments": {"order_id": ORDER}}).content
    assert text(identity) == USER

    state = mine.state()
    assert state.authenticated_user_id == USER
    assert state.changed["orders"][ORDER]["status"] == "cancelled"
    assert [(c.side, c.name) for c in mine.calls()] == [
        ("assistant", "find_user_id_by_email"),
        ("assistant", "get_order_details"),
        ("assistant", "cancel_pending_order"),
    ]
    assert other.state() == before and other.calls() == []
    assert other.query_data("orders", {"order_id": ORDER})[ORDER]["status"] == "pending"


def test_a_refused_call_is_a_tool_error_with_the_tools_message(served):
    env = served.open("refused")
    twin = Environment(*WORLD)
    twin.init()
    before = env.state()
    arguments = {"order_id": "#W0000000", "reason": "no longer needed"}
    result = sdk(served.url("refused"), lambda s: s.call_tool("cancel_pending_order", arguments))
    expected = twin.run({"name": "cancel_pending_order", "arguments": arguments})
    assert expected.error and expected.content.startswith("Error: ")
    assert result.is_error and text(result) == expected.content
    assert (result.meta or {}).get(CATEGORY_META) == expected.category
    assert env.state() == before
    assert [c.result for c in env.calls()] == [expected]


def test_repeated_writes_are_executed_as_the_environment_executes_them(served):
    """At-least-once delivery: a write sent twice runs twice (the second refused by the world: the order is no
    longer pending); both are in the ledger."""
    env = served.open("twice", authenticated_user_id=USER)
    arguments = {"order_id": ORDER, "reason": "ordered by mistake"}

    async def work(session: ClientSession) -> list[types.CallToolResult]:
        return [await session.call_tool("cancel_pending_order", arguments) for _ in range(2)]

    first, second = sdk(served.url("twice"), work)
    assert not first.is_error and second.is_error
    assert [(c.name, c.arguments, c.result.error) for c in env.calls()] == [
        ("cancel_pending_order", arguments, False),
        ("cancel_pending_order", arguments, True),
    ]


def test_an_unknown_or_closed_episode_is_a_404_naming_it(served):
    reply = httpx.post(
        served.url("nobody"),
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={"accept": "application/json, text/event-stream"},
    )
    assert reply.status_code == 404
    assert reply.json()["error"]["message"] == "unknown or closed episode 'nobody'"

    with pytest.raises(BaseException) as raised:
        sdk(served.url("nobody"), lambda s: s.list_tools())
    error = first_error(raised.value)
    assert isinstance(error, MCPError) and "unknown or closed episode 'nobody'" in error.message

    served.open("closing")
    assert [t.name for t in sdk(served.url("closing"), lambda s: s.list_tools()).tools]
    served.episodes["closing"].close()  # closed, still looked up: the environment refuses the call
    result = sdk(served.url("closing"), lambda s: s.call_tool("list_all_product_types", {}))
    assert result.is_error and "no session is running" in text(result)
    served.episodes.pop("closing")
    with pytest.raises(McpRequestError, match="unknown or closed episode 'closing'"):
        McpEnvironmentClient(served.url("closing"))


def test_a_mount_serves_it_too(served):
    """Under a Starlette `Mount` the URL ends in a slash; without it the client follows the mount's redirect."""
    served.open("mounted")
    for url in (served.url("mounted", at="mounted") + "/", served.url("mounted", at="mounted")):
        with McpEnvironmentClient(url) as client:
            assert client.call("find_user_id_by_email", {"email": EMAIL}) == ToolResult(content=USER)


def test_the_session_id_header_is_not_the_episode(served):
    """Stateless: no Mcp-Session-Id is handed out, and one sent anyway does not pick an episode; the URL does."""
    served.open("by-url")
    headers = {"accept": "application/json, text/event-stream", "mcp-session-id": "other"}
    reply = httpx.post(
        served.url("by-url"),
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "find_user_id_by_email", "arguments": {"email": EMAIL}},
        },
        headers=headers,
    )
    assert reply.status_code == 200 and "mcp-session-id" not in reply.headers
    assert reply.json()["result"]["content"] == [{"type": "text", "text": USER}]
    assert served.episodes["by-url"].state().authenticated_user_id == USER


def test_a_customers_tool_is_never_served(served):
    """Telecom's customer has tools of their own (dual control): not listed, and calling one over MCP is the
    agent calling a tool it does not hold, refused, changing nothing on either side."""
    from tests.needs import need_tau2

    env = served.open("telecom", "telecom", str(need_tau2("telecom")))
    metadata = env.get_metadata()
    customer = {schema["function"]["name"] for schema in metadata.user_tools}
    assert "toggle_airplane_mode" in customer
    before = env.state()

    async def work(session: ClientSession) -> tuple[types.ListToolsResult, types.CallToolResult]:
        return await session.list_tools(), await session.call_tool("toggle_airplane_mode", {})

    listed, called = sdk(served.url("telecom"), work)
    names = {tool.name for tool in listed.tools}
    assert names == {schema["function"]["name"] for schema in metadata.tools}
    assert not names & customer
    assert called.is_error and "unknown tool 'toggle_airplane_mode'" in text(called)
    assert env.state() == before


def test_the_synchronous_client_drives_an_episode(served):
    env = served.open("sync")
    twin = Environment(*WORLD)
    twin.init()
    with McpEnvironmentClient(served.url("sync")) as client:
        assert client.list_tools() == env.get_metadata().tools
        calls = [
            ("find_user_id_by_email", {"email": EMAIL}),
            ("cancel_pending_order", {"order_id": "#W0000000", "reason": "no longer needed"}),
            ("cancel_pending_order", {"order_id": ORDER, "reason": "no longer needed"}),
        ]
        for name, arguments in calls:
            got = client.call(name, arguments)
            assert isinstance(got, ToolResult)
            assert got == twin.run({"name": name, "arguments": arguments}), name
    assert env.state() == twin.state()
    with pytest.raises(McpRequestError, match="after close"):
        client.list_tools()
    client.close()  # twice: harmless


def test_episodes_in_flight_at_once_see_only_their_own_writes(served):
    ids = [f"flight-{i}" for i in range(6)]
    envs = {episode: served.open(episode, authenticated_user_id=USER) for episode in ids}
    zips = {episode: f"{10000 + i}" for i, episode in enumerate(ids)}
    address = {"address1": "1 Main St", "address2": "", "city": "Austin", "state": "TX", "country": "USA"}
    errors: list[BaseException] = []

    def drive(episode: str) -> None:
        try:
            with McpEnvironmentClient(served.url(episode)) as client:
                result = client.call("modify_user_address", {"user_id": USER, **address, "zip": zips[episode]})
                assert not result.error, result
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)

    threads = [threading.Thread(target=drive, args=(episode,)) for episode in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    for episode, env in envs.items():
        assert env.state().changed["users"][USER]["address"]["zip"] == zips[episode]
        assert len(env.calls()) == 1


def test_the_client_names_a_server_it_cannot_reach_and_bad_arguments(served):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(McpUnavailableError, match=f"127.0.0.1:{port}") as raised:
        McpEnvironmentClient(f"http://127.0.0.1:{port}/episodes/x/mcp", timeout=5)
    assert isinstance(raised.value, InfrastructureError)
    with pytest.raises(InputError, match="url must be an http"):
        McpEnvironmentClient("episodes/x/mcp")
    with pytest.raises(InputError, match="timeout must be a positive"):
        McpEnvironmentClient(served.url("x"), timeout=0)
    served.open("args")
    with McpEnvironmentClient(served.url("args")) as client:
        with pytest.raises(InputError, match="arguments must be an object"):
            client.call("calculate", ["1 + 1"])  # type: ignore[arg-type]
        assert client.call("calculate", {"expression": "1 + 1"}) == ToolResult(content="2.0")


class Counter:
    """An environment of its own, not agentloop's tables: one counter, a tool that adds to it (results as JSON
    objects, as a protocol implementation may return them) and a tool whose implementation crashes."""

    def __init__(self) -> None:
        self.value = 0

    def get_metadata(self) -> EnvironmentMetadata:
        def tool(name: str, description: str) -> dict[str, Any]:
            parameters = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
            return {
                "type": "function",
                "function": {"name": name, "description": description, "parameters": parameters},
            }

        return EnvironmentMetadata(
            domain="counter",
            world="one",
            world_digest="0",
            policy="Add what the customer asks.",
            tools=[tool("add", "Add n to the counter."), tool("crash", "A bug.")],
            tool_kinds={"add": "write", "crash": "generic"},
            tables={},
        )

    def run(self, call: Mapping[str, Any], side: str = "assistant") -> dict[str, Any]:
        if call["name"] == "crash":
            raise RuntimeError("a bug in the environment")
        n = call["arguments"].get("n")
        if not isinstance(n, int):
            return {"content": "Error: n must be an integer", "error": True, "category": "invalid_arguments"}
        self.value += n
        return {"content": str(self.value)}


def test_any_protocol_implementation_is_served_and_its_crash_is_infrastructure(served):
    counter = Counter()
    served.episodes["counter"] = counter  # type: ignore[assignment]
    with McpEnvironmentClient(served.url("counter")) as client:
        assert client.list_tools() == counter.get_metadata().tools
        assert client.call("add", {"n": 2}) == ToolResult(content="2")
        assert client.call("add", {"n": "x"}) == ToolResult(
            content="Error: n must be an integer", error=True, category="invalid_arguments"
        )
        with pytest.raises(McpUnavailableError, match="tools/call 'crash'"):
            client.call("crash", {"n": 1})
        assert client.call("add", {"n": 3}) == ToolResult(content="5")
