"""The episode hub: one MCP server per process at which each running program episode has its own URL.

`episode_hub()` is the process's hub, started the first time an episode registers: a uvicorn server on 127.0.0.1 and
a free port, in a daemon thread, serving `mcp_app(lookup)` (`pipeline.environment.mcp`) at
`/episodes/{episode_id}/mcp`. An episode registers a live view of the loop's own session (`LiveEpisode`: the
`get_metadata` and `run` that `mcp_app` calls) and gets an unguessable id (`secrets.token_urlsafe`); it unregisters
at its end, after which its URL answers 404. The view executes each call in the episode's session through the
runner's `EpisodeTools` (the world log is the ledger, the episode's limits hold), so the hub holds no state of its
own beyond the ids.

Threads: MCP calls arrive on the server's worker threads while the runner's thread waits in the program's turn; the
registry of episodes is guarded by a lock, and `EpisodeTools` serialises the calls of one episode.

The hub failing is infrastructure, never the agent's doing: a hub that cannot start raises `HubError` (an
`InfrastructureError`: the trial is retried and excluded, as for a model endpoint), and so does an episode whose view
failed while serving a call (`LiveEpisode.failure`).
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import threading
import time
import weakref
from typing import Any, cast

from pipeline.environment import Environment, mcp_app
from pipeline.errors import InfrastructureError
from pipeline.protocol import EnvironmentMetadata, EnvironmentProtocol, ToolResult
from pipeline.rollout import EpisodeTools
from pipeline.world import World

HOST = "127.0.0.1"
START_TIMEOUT_S = 30.0
ROUTE = "/episodes/{episode_id}/mcp"


class HubError(InfrastructureError):
    """The episode hub could not start, or failed while serving an episode's call."""


_metadata: weakref.WeakKeyDictionary[World, EnvironmentMetadata] = weakref.WeakKeyDictionary()
_metadata_lock = threading.Lock()


def metadata_of(world: World) -> EnvironmentMetadata:
    """The environment metadata of `world` (its policy, tools and their kinds, tables), computed once per world."""
    with _metadata_lock:
        try:
            found = _metadata.get(world)
        except TypeError:  # a world that cannot be weakly referenced: not cached
            found = None
    if found is None:
        found = Environment(world.domain, world).get_metadata()
        with _metadata_lock, contextlib.suppress(TypeError):  # not weakly referenceable: not cached
            _metadata[world] = found
    return found


class LiveEpisode:
    """One running episode as `mcp_app` sees it: `get_metadata()` and `run(call, 'assistant')` on the loop's own
    session, through the runner's `EpisodeTools`. `failure` is the first error raised while serving a call (then the
    episode is lost to infrastructure); `calls` counts the calls served."""

    def __init__(self, tools: EpisodeTools) -> None:
        self.tools = tools
        self.failure: BaseException | None = None
        self.calls = 0

    def get_metadata(self) -> EnvironmentMetadata:
        try:
            return metadata_of(self.tools.session.world)
        except BaseException as exc:
            self.failure = self.failure or exc
            raise

    def run(self, call: Any, side: str = "assistant") -> ToolResult:
        if side != "assistant":  # mcp_app calls the agent's side only
            why = f"Error: an agent program calls the agent's tools, not side {side!r}"
            return ToolResult(content=why, error=True)
        try:
            name = call.get("name")
            arguments = call.get("arguments")
            message, category = self.tools.run(str(name), dict(arguments) if isinstance(arguments, dict) else None)
            self.calls += 1
            return ToolResult(content=message.content or "", error=message.error, category=category)
        except BaseException as exc:
            self.failure = self.failure or exc
            raise


class EpisodeHub:
    """The process's MCP server for program episodes (see the module docstring)."""

    def __init__(self, host: str = HOST) -> None:
        self.host = host
        self._episodes: dict[str, LiveEpisode] = {}
        self._lock = threading.Lock()
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.base_url: str | None = None

    @property
    def alive(self) -> bool:
        """Whether the server is up (started and its thread running)."""
        return self._thread is not None and self._thread.is_alive() and bool(getattr(self._server, "started", False))

    def start(self) -> None:
        """Start the server if it is not running; a `HubError` when it cannot."""
        with self._lock:
            if self.alive:
                return
            self._start()

    def _start(self) -> None:
        import uvicorn
        from starlette.applications import Starlette
        from starlette.routing import Route

        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # accepted connections inherit it: without, a small response written in two parts waits out the
            # client's delayed ACK (about 40 ms a call instead of about 1 ms)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind((self.host, 0))
        except OSError as exc:
            raise HubError(f"the episode hub cannot listen on {self.host}: {exc}") from None
        port = sock.getsockname()[1]
        app = Starlette(routes=[Route(ROUTE, mcp_app(self.lookup), include_in_schema=False)])
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_keep_alive=30)
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="agentloop-episode-hub", daemon=True
        )
        thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not server.started:
            server.should_exit = True
            sock.close()
            why = "its thread stopped" if not thread.is_alive() else f"not up after {START_TIMEOUT_S:g} s"
            raise HubError(f"the episode hub could not start on {self.host}:{port}: {why}")
        self._server, self._thread = server, thread
        self.base_url = f"http://{self.host}:{port}"

    def register(self, episode: LiveEpisode) -> str:
        """Serve `episode`; its id (unguessable). Starts the server first if needed."""
        self.start()
        episode_id = secrets.token_urlsafe(24)
        with self._lock:
            self._episodes[episode_id] = episode
        return episode_id

    def url(self, episode_id: str) -> str:
        """The MCP URL of a registered episode."""
        return f"{self.base_url}{ROUTE.format(episode_id=episode_id)}"

    def unregister(self, episode_id: str) -> None:
        """Stop serving the episode (its URL answers 404 from now on); unknown ids are ignored."""
        with self._lock:
            self._episodes.pop(episode_id, None)

    def lookup(self, episode_id: str) -> EnvironmentProtocol | None:
        with self._lock:
            found = self._episodes.get(episode_id)
        return cast(EnvironmentProtocol, found) if found is not None else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._episodes)

    def stop(self) -> None:
        """Stop the server (tests); a later `register` starts a new one."""
        with self._lock:
            server, thread = self._server, self._thread
            self._server, self._thread, self.base_url = None, None, None
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(10)


_hub: EpisodeHub | None = None
_hub_lock = threading.Lock()


def episode_hub() -> EpisodeHub:
    """This process's hub (made on first use; its server starts when the first episode registers)."""
    global _hub
    with _hub_lock:
        if _hub is None:
            _hub = EpisodeHub()
        return _hub
