"""Any environment served over HTTP (`agentloop env serve`): the six functions as JSON endpoints, one isolated
episode per `POST /episodes`, behind an unguessable id.

The service holds an `EnvironmentFactory` (`pipeline.protocol`) and a fixed set of world names. Each episode is a
fresh environment made by the factory for its world and started with `init(task)`; its id is
`secrets.token_urlsafe(24)`. Episodes live in an `EpisodeRegistry`: an episode idle for longer than the TTL is
closed (its `close()` called), and at most `max_episodes` are open at once (when full, the least recently used idle
episode is closed; when none is idle the request is refused with 503), so memory stays bounded however many
episodes clients open or abandon. Calls into one episode are serialised by a lock of its own; the endpoints are
plain functions, which FastAPI runs in its thread pool.

Endpoints (JSON; the schema is served at `/openapi.json`):

- `GET /worlds`: the world names served; `GET /worlds/{world}/metadata`; `POST /worlds/{world}/query`
  (`{table, predicate}`: the base world's records, key → record);
- `POST /episodes` (`{world, task, authenticated_user_id}`) → `{episode, world, state, url, mcp_url}`;
- `POST /episodes/{id}/run` (`{call: {name, arguments}, side}`) → the `ToolResult`, with the state after it;
  `GET /episodes/{id}/state`; `POST /episodes/{id}/query`; `GET /episodes/{id}/reward`;
  `POST /episodes/{id}/say` (`{text, side}`); `GET /episodes/{id}/calls`; `DELETE /episodes/{id}` (closes it;
  closing one that is gone is not an error).

An unknown or expired episode is a 404 naming it, an unknown world a 404 naming the served ones; a body that does
not fit its schema is a 422 naming the field; what an environment refuses as the caller's mistake (an
`InputError` or `TaskError`, e.g. a call before `init`, an unknown table) is a 400 with its message; an
environment's own infrastructure failing (an `InfrastructureError`), or no room for another episode, is a 503.
Every error body is `{"detail": message}`.

Each episode's agent-side tools are also served over MCP at `/episodes/{id}/mcp` (`mcp_url`): `mount_mcp` routes
there the application `pipeline.environment.mcp.mcp_app(lookup)` makes, `lookup` giving it the open episode (each
of its calls taking the episode's lock).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from pipeline.errors import AgentloopError, InfrastructureError, InputError, TaskError, WorldError
from pipeline.protocol import (
    CallRecord,
    EnvironmentFactory,
    EnvironmentMetadata,
    EnvironmentProtocol,
    EnvironmentState,
    Reward,
    Side,
    ToolResult,
    as_model,
)

log = logging.getLogger(__name__)

DEFAULT_TTL_S = 600.0
"""Seconds an episode may stay idle (no call) before the service closes it."""
DEFAULT_MAX_EPISODES = 1000
"""Episodes open at once, at most."""
MCP_PATH = "/episodes/{episode_id}/mcp"
"""Where an episode's MCP server is mounted (its agent-side tools)."""
SWEEP_EVERY_S = 30.0
"""How often, at most, a running service looks for expired episodes between requests."""


class EpisodeNotFoundError(InputError, LookupError):
    """An episode id the service does not hold: never opened, closed, or expired."""


class UnknownWorldError(InputError, LookupError):
    """A world name the service does not serve."""


class ServiceFullError(InfrastructureError):
    """Every episode slot is taken by an episode in a call: none can be closed to make room."""


class EnvironmentFailure(InfrastructureError):
    """An environment raised something other than an `AgentloopError`: a bug of its own (answered 500)."""


@contextlib.contextmanager
def failures(world: str) -> Iterator[None]:
    """An environment's own unexpected exception as an `EnvironmentFailure` (logged with its traceback), so the
    service answers a 500 in its own shape and keeps the connection."""
    try:
        yield
    except AgentloopError:
        raise
    except Exception as exc:
        log.exception("the environment of world %s failed", world)
        raise EnvironmentFailure(f"the environment of world {world!r} failed: {type(exc).__name__}: {exc}") from exc


# ---- the registry ----------------------------------------------------------------------------------------------
@dataclass(eq=False)
class Episode:
    """One open episode: its environment, the lock its calls take, when it was last used."""

    id: str
    world: str
    env: EnvironmentProtocol
    last_used: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    waiting: int = 0
    """Requests that looked the episode up and wait for (or hold) its lock: such an episode is not idle."""
    closed: bool = False
    view: LockedEpisode | None = None
    """The episode as an environment for the MCP server (`EpisodeRegistry.lookup`), made when first asked for."""


class EpisodeRegistry:
    """The open episodes, least recently used first, bounded in number and idle time.

    `ttl_s`: an episode unused for longer is closed (at the next sweep: every `add`, every `use`, and the service's
    own timer). `max_episodes`: when that many are open, `add` closes the least recently used idle one, or refuses
    (`ServiceFullError`). Closing calls the environment's `close()` outside the registry's lock, holding the
    episode's own; an error it raises is logged, never passed on."""

    def __init__(
        self,
        ttl_s: float = DEFAULT_TTL_S,
        max_episodes: int = DEFAULT_MAX_EPISODES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not ttl_s > 0:
            raise InputError(f"ttl: expected seconds above 0, got {ttl_s!r}")
        if max_episodes < 1:
            raise InputError(f"max_episodes: expected at least 1, got {max_episodes!r}")
        self.ttl_s, self.max_episodes, self.clock = float(ttl_s), int(max_episodes), clock
        self._episodes: OrderedDict[str, Episode] = OrderedDict()
        self._lock = threading.Lock()
        self.opened = 0
        self.expired = 0
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._episodes)

    def __contains__(self, episode_id: object) -> bool:
        return episode_id in self._episodes

    def add(self, world: str, env: EnvironmentProtocol) -> Episode:
        """Register a started environment under a fresh unguessable id (closing the least recently used idle
        episode when full; `ServiceFullError` when none is idle)."""
        self.sweep()
        with self._lock:
            evicted = None
            if len(self._episodes) >= self.max_episodes:
                evicted = self._take_idle(lambda ep: True, limit=1)
                if not evicted:
                    raise ServiceFullError(
                        f"the service holds {self.max_episodes} episodes, all in a call; retry, or raise --max-episodes"
                    )
                self.evicted += 1
            episode_id = secrets.token_urlsafe(24)
            while episode_id in self._episodes:  # pragma: no cover - 192 random bits
                episode_id = secrets.token_urlsafe(24)
            episode = Episode(id=episode_id, world=world, env=env, last_used=self.clock())
            self._episodes[episode_id] = episode
            self.opened += 1
        if evicted:
            self._close_taken(evicted)
        return episode

    @contextlib.contextmanager
    def use(self, episode_id: str) -> Iterator[Episode]:
        """The episode, its lock held for the duration (calls into one episode run one at a time); it counts as
        used now and when the call ends. `EpisodeNotFoundError` for an id not held (or closed meanwhile)."""
        self.sweep()
        with self._lock:
            episode = self._episodes.get(episode_id)
            if episode is None:
                raise EpisodeNotFoundError(_not_found(episode_id))
            episode.waiting += 1
            self._touch(episode)
        try:
            with episode.lock:
                if episode.closed:
                    raise EpisodeNotFoundError(_not_found(episode_id))
                try:
                    yield episode
                finally:
                    with self._lock:
                        if not episode.closed:
                            self._touch(episode)
        finally:
            with self._lock:
                episode.waiting -= 1

    def close(self, episode_id: str) -> bool:
        """Close an episode (waiting for a call in progress to end); False when it was not open."""
        with self._lock:
            episode = self._episodes.get(episode_id)
            if episode is None:
                return False
            episode.waiting += 1
        try:
            with episode.lock:
                with self._lock:
                    if episode.closed:
                        return False
                    self._episodes.pop(episode_id, None)
                    episode.closed = True
                _close_env(episode)
                return True
        finally:
            with self._lock:
                episode.waiting -= 1

    def sweep(self) -> int:
        """Close every idle episode unused for longer than the TTL; how many were closed."""
        deadline = self.clock() - self.ttl_s
        with self._lock:
            taken = self._take_idle(lambda ep: ep.last_used <= deadline, stop_at_first_kept=True)
            self.expired += len(taken)
        self._close_taken(taken)
        return len(taken)

    def close_all(self) -> None:
        """Close every episode (the service is stopping); calls in progress are waited for."""
        for episode_id in list(self._episodes):
            self.close(episode_id)

    def lookup(
        self, episode_id: str, metadata: Mapping[str, EnvironmentMetadata] | None = None
    ) -> EnvironmentProtocol | None:
        """The episode as an environment whose every call takes the episode's lock and counts as use (None: no
        such episode): what the MCP server is given. The same object each time for one episode (so what a caller
        keys on it holds); `metadata` (world → its metadata) answers `get_metadata()` without a call."""
        with self._lock:
            episode = self._episodes.get(episode_id)
            if episode is None:
                return None
            if episode.view is None:
                known = metadata.get(episode.world) if metadata is not None else None
                episode.view = LockedEpisode(self, episode_id, known)
            return episode.view

    # ---- internals ----------------------------------------------------------------------------------------------
    def _touch(self, episode: Episode) -> None:
        episode.last_used = self.clock()
        self._episodes.move_to_end(episode.id)

    def _take_idle(
        self, wanted: Callable[[Episode], bool], limit: int | None = None, stop_at_first_kept: bool = False
    ) -> list[Episode]:
        """Remove (holding the registry's lock) idle episodes `wanted` says to, least recently used first; each
        comes back with its own lock held and marked closed."""
        taken: list[Episode] = []
        for episode in self._episodes.values():  # oldest first; usually the first is kept and the loop ends there
            if limit is not None and len(taken) >= limit:
                break
            if not wanted(episode):
                if stop_at_first_kept:
                    break  # the rest were used more recently
                continue
            if episode.waiting or not episode.lock.acquire(blocking=False):
                continue  # in a call: not idle
            episode.closed = True
            taken.append(episode)
        for episode in taken:
            del self._episodes[episode.id]
        return taken

    @staticmethod
    def _close_taken(taken: list[Episode]) -> None:
        for episode in taken:
            try:
                _close_env(episode)
            finally:
                episode.lock.release()


def _close_env(episode: Episode) -> None:
    try:
        episode.env.close()
    except Exception as exc:  # noqa: BLE001 - closing must not fail the request that triggered it; it is logged
        log.warning("closing episode %s (world %s) failed: %s: %s", episode.id, episode.world, type(exc).__name__, exc)


def _not_found(episode_id: str) -> str:
    shown = episode_id if len(episode_id) <= 80 else episode_id[:77] + "..."
    return f"episode {shown!r} is not open here (never opened, closed, or expired after its idle time)"


class LockedEpisode:
    """An open episode as an `EnvironmentProtocol`: each call takes the episode's lock and counts as use.

    `close()` closes the episode in the registry. A call after the episode closed raises `EpisodeNotFoundError`."""

    def __init__(self, registry: EpisodeRegistry, episode_id: str, metadata: EnvironmentMetadata | None = None) -> None:
        self._registry, self.episode_id, self._metadata = registry, episode_id, metadata

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        with self._registry.use(self.episode_id) as episode:
            return getattr(episode.env, method)(*args, **kwargs)

    def get_metadata(self) -> EnvironmentMetadata:
        if self._metadata is None:
            self._metadata = as_model(EnvironmentMetadata, self._call("get_metadata"))
        return self._metadata

    def init(self, task: Mapping[str, Any] | None = None, *, authenticated_user_id: str | None = None) -> Any:
        return as_model(EnvironmentState, self._call("init", task, authenticated_user_id=authenticated_user_id))

    def run(self, call: Mapping[str, Any], side: Side = "assistant") -> Any:
        return as_model(ToolResult, self._call("run", call, side))

    def state(self) -> Any:
        return as_model(EnvironmentState, self._call("state"))

    def query_data(self, table: str, predicate: Mapping[str, Any] | None = None) -> Mapping[str, dict[str, Any]]:
        return dict(self._call("query_data", table, predicate))

    def reward(self) -> Any:
        return as_model(Reward, self._call("reward"))

    def say(self, text: str, side: Side = "assistant") -> None:
        self._call("say", text, side)

    def calls(self) -> list[Any]:
        return [as_model(CallRecord, c) for c in self._call("calls")]

    def close(self) -> None:
        self._registry.close(self.episode_id)


# ---- the wire models --------------------------------------------------------------------------------------------
class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CallIn(_Body):
    """One tool call."""

    name: str = Field(description="The tool to call.")
    arguments: dict[str, Any] | None = Field(
        default_factory=dict, description="The call's arguments, an object; null: arguments that did not parse."
    )
    id: str | None = Field(default=None, description="The caller's id for the call (optional).")
    raw_arguments: str | None = Field(default=None, description="The arguments as text, as a model wrote them.")


class OpenEpisode(_Body):
    """A new episode of a served world."""

    world: str = Field(description="The world to open it in: one of GET /worlds (a task names it in its `world`).")
    task: dict[str, Any] | None = Field(
        default=None, description="The task (its JSON object) whose starting state the episode begins in; null: none."
    )
    authenticated_user_id: str | None = Field(
        default=None, description="The customer the episode starts authenticated as; null: nobody yet."
    )


class EpisodeOut(_Body):
    """An episode just opened."""

    episode: str = Field(description="The episode's id: unguessable; every other episode endpoint names it.")
    world: str = Field(description="The world it runs in.")
    state: EnvironmentState = Field(description="Its starting state.")
    url: str = Field(description="The episode's URL (POST {url}/run, GET {url}/state, DELETE {url}, ...).")
    mcp_url: str = Field(description="Where the episode's agent-side tools are served over MCP (streamable HTTP).")


class RunIn(_Body):
    """A tool call on one side of the conversation."""

    call: CallIn = Field(description="The call: {name, arguments}.")
    side: Side = Field(default="assistant", description="Who calls: 'assistant' (the agent) or 'user' (the customer).")


class QueryIn(_Body):
    """A query of one table."""

    table: str = Field(description="The table to read (see the metadata's `tables` and `user_tables`).")
    predicate: dict[str, Any] | None = Field(
        default=None, description="{dotted.field: value}: only records whose fields equal these; null: every record."
    )


class SayIn(_Body):
    """A message of the conversation."""

    text: str = Field(description="What was said.")
    side: Side = Field(
        default="assistant", description="Who said it: 'assistant' (the agent) or 'user' (the customer)."
    )


class WorldsOut(_Body):
    """The worlds a service serves."""

    worlds: list[str] = Field(description="The world names, in the order given at start.")


class ErrorOut(BaseModel):
    """Why a request was refused."""

    detail: str = Field(description="One line naming the field, the episode or the world at fault.")


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    what = {
        400: "The environment refused the request as the caller's mistake (its message says why).",
        404: "No such episode (never opened, closed or expired), or a world not served.",
        422: "The body does not fit its schema; the message names the field.",
        503: "The environment's infrastructure failed, or every episode slot is busy: retry.",
    }
    return {code: {"model": ErrorOut, "description": what[code]} for code in codes}


# ---- the application --------------------------------------------------------------------------------------------
def create_app(
    factory: EnvironmentFactory,
    worlds: Iterable[str],
    *,
    ttl_s: float = DEFAULT_TTL_S,
    max_episodes: int = DEFAULT_MAX_EPISODES,
    domain: str | None = None,
    sweep_every_s: float = SWEEP_EVERY_S,
) -> FastAPI:
    """The service for `worlds` (names), each episode an environment `factory(world)` makes.

    One environment per world is made at once and kept, never started, for the world's metadata and base-world
    queries; its metadata must name the world it was made for. `domain` only titles the schema."""
    names = list(dict.fromkeys(worlds))
    if not names:
        raise InputError("worlds: serve at least one world")
    registry = EpisodeRegistry(ttl_s, max_episodes)
    bases: dict[str, EnvironmentProtocol] = {}
    metadata: dict[str, EnvironmentMetadata] = {}
    for name in names:
        base = factory(name)
        meta = as_model(EnvironmentMetadata, base.get_metadata())
        if meta.world != name:
            raise InputError(f"world {name!r}: the environment made for it says its world is {meta.world!r}")
        bases[name], metadata[name] = base, meta
    base_locks = {name: threading.Lock() for name in names}

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        sweeper = asyncio.create_task(_sweep_forever(registry, min(sweep_every_s, registry.ttl_s)))
        try:
            yield
        finally:
            sweeper.cancel()
            await asyncio.to_thread(registry.close_all)
            for base in bases.values():
                with contextlib.suppress(Exception):
                    base.close()

    title = f"agentloop environment service ({domain})" if domain else "agentloop environment service"
    app = FastAPI(title=title, version="1", lifespan=lifespan)
    app.state.registry = registry
    _error_handlers(app)

    def world_of(world: str) -> str:
        if world not in metadata:
            raise UnknownWorldError(f"world {world!r} is not served here; served: {', '.join(names)}")
        return world

    def episode_url(request: Request, episode_id: str) -> str:
        return f"{str(request.base_url).rstrip('/')}/episodes/{episode_id}"

    @app.get("/worlds", response_model=WorldsOut, tags=["worlds"])
    def list_worlds() -> WorldsOut:
        """The world names served: a task's `world` must be one of them."""
        return WorldsOut(worlds=names)

    @app.get("/worlds/{world}/metadata", response_model=EnvironmentMetadata, responses=_errors(404), tags=["worlds"])
    def world_metadata(world: str) -> EnvironmentMetadata:
        """The world's policy, each side's tools and what each does, its tables."""
        return metadata[world_of(world)]

    @app.post(
        "/worlds/{world}/query",
        response_model=dict[str, dict[str, Any]],
        responses=_errors(400, 404, 422, 503),
        tags=["worlds"],
    )
    def world_query(world: str, body: QueryIn) -> dict[str, dict[str, Any]]:
        """The base world's records of a table whose fields equal the predicate: key → record, in key order."""
        with base_locks[world_of(world)], failures(world):
            return dict(bases[world].query_data(body.table, body.predicate))

    @app.post(
        "/episodes",
        status_code=201,
        response_model=EpisodeOut,
        responses=_errors(400, 404, 422, 503),
        tags=["episodes"],
    )
    def open_episode(body: OpenEpisode, request: Request) -> EpisodeOut:
        """A fresh, isolated episode of the world in the task's starting state (its set-up run on both sides)."""
        world = world_of(body.world)
        with failures(world):
            env = factory(world)
        try:
            with failures(world):
                state = as_model(
                    EnvironmentState, env.init(body.task, authenticated_user_id=body.authenticated_user_id)
                )
            episode = registry.add(world, env)
        except BaseException:
            with contextlib.suppress(Exception):
                env.close()
            raise
        url = episode_url(request, episode.id)
        return EpisodeOut(episode=episode.id, world=world, state=state, url=url, mcp_url=f"{url}/mcp")

    on_episode = _errors(400, 404, 503)

    @app.post(
        "/episodes/{episode_id}/run",
        tags=["episodes"],
        response_model=ToolResult,
        responses=_errors(400, 404, 422, 503),
    )
    def run(episode_id: str, body: RunIn) -> ToolResult:
        """Execute one tool call on one side; a refused call changes nothing and comes back with `error` true. The
        episode's state after the call comes with it (`state`)."""
        call = body.call.model_dump(exclude_unset=True)
        call.setdefault("arguments", {})
        with registry.use(episode_id) as episode, failures(episode.world):
            result = as_model(ToolResult, episode.env.run(call, body.side))
            if result.state is None:  # the state after the call rides along: the caller mirrors it at once
                result = result.model_copy(update={"state": as_model(EnvironmentState, episode.env.state())})
            return result

    @app.get("/episodes/{episode_id}/state", tags=["episodes"], response_model=EnvironmentState, responses=on_episode)
    def state(episode_id: str) -> EnvironmentState:
        """The records the episode changed (each side), who is authenticated, the state hash."""
        with registry.use(episode_id) as episode, failures(episode.world):
            return as_model(EnvironmentState, episode.env.state())

    @app.post(
        "/episodes/{episode_id}/query",
        tags=["episodes"],
        response_model=dict[str, dict[str, Any]],
        responses=_errors(400, 404, 422, 503),
    )
    def query(episode_id: str, body: QueryIn) -> dict[str, dict[str, Any]]:
        """A table's records as the episode sees them, whose fields equal the predicate: key → record."""
        with registry.use(episode_id) as episode, failures(episode.world):
            return dict(episode.env.query_data(body.table, body.predicate))

    @app.get("/episodes/{episode_id}/reward", tags=["episodes"], response_model=Reward, responses=on_episode)
    def reward(episode_id: str) -> Reward:
        """The environment's own score of the episode so far."""
        with registry.use(episode_id) as episode, failures(episode.world):
            return as_model(Reward, episode.env.reward())

    @app.post("/episodes/{episode_id}/say", tags=["episodes"], status_code=204, responses=_errors(400, 404, 422, 503))
    def say(episode_id: str, body: SayIn) -> Response:
        """A message of the conversation (a rule may read it, e.g. a customer's confirmation)."""
        with registry.use(episode_id) as episode, failures(episode.world):
            episode.env.say(body.text, body.side)
        return Response(status_code=204)

    @app.get("/episodes/{episode_id}/calls", tags=["episodes"], response_model=list[CallRecord], responses=on_episode)
    def calls(episode_id: str) -> list[CallRecord]:
        """Every call the episode executed, in order."""
        with registry.use(episode_id) as episode, failures(episode.world):
            return [as_model(CallRecord, c) for c in episode.env.calls()]

    @app.delete("/episodes/{episode_id}", tags=["episodes"], status_code=204)
    def close(episode_id: str) -> Response:
        """Close the episode: what it changed is discarded. Closing one that is gone is not an error."""
        registry.close(episode_id)
        return Response(status_code=204)

    mount_mcp(app, lambda episode_id: registry.lookup(episode_id, metadata))
    return app


async def _sweep_forever(registry: EpisodeRegistry, every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        try:
            await asyncio.to_thread(registry.sweep)
        except Exception:  # noqa: BLE001 - the timer goes on; each request sweeps too
            log.exception("sweeping expired episodes failed")


def mount_mcp(app: FastAPI, lookup: Callable[[str], EnvironmentProtocol | None]) -> None:
    """Route each episode's MCP server (`pipeline.environment.mcp.mcp_app(lookup)`: its agent-side tools) at
    `/episodes/{episode_id}/mcp`. A route, not a mount: a mount would answer the URL without a trailing slash with a
    redirect first."""
    from pipeline.environment.mcp import mcp_app

    app.router.routes.append(Route(MCP_PATH, mcp_app(lookup), include_in_schema=False))


def _error_handlers(app: FastAPI) -> None:
    """Every refusal as `{"detail": message}`: a body that fails its schema a 422 naming the field; the
    environment's own refusals of the caller 400; an unknown episode or world 404; infrastructure 503."""

    def answer(status: int, message: str) -> JSONResponse:
        return JSONResponse(status_code=status, content={"detail": " ".join(message.split()) or "refused"})

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first: dict[str, Any] = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"] if p != "body")
        return answer(422, f"field {where}: {first['msg']}" if where else str(first["msg"]))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        response = answer(exc.status_code, str(exc.detail))
        response.headers.update(getattr(exc, "headers", None) or {})
        return response

    @app.exception_handler(AgentloopError)
    async def _refused(_: Request, exc: AgentloopError) -> JSONResponse:
        if isinstance(exc, EnvironmentFailure):
            return answer(500, str(exc))
        if isinstance(exc, EpisodeNotFoundError | UnknownWorldError):
            return answer(404, str(exc))
        if isinstance(exc, InfrastructureError):
            return answer(503, str(exc))
        if isinstance(exc, InputError | TaskError | WorldError):
            return answer(400, str(exc))
        log.error("the environment raised %s: %s", type(exc).__name__, exc)
        return answer(500, f"{type(exc).__name__}: {exc}")

    build = app.openapi

    def openapi() -> dict[str, Any]:
        """The served schema: every error documented as `ErrorOut`, FastAPI's own 422 shape replaced."""
        if app.openapi_schema is None:
            schema = build()
            for item in schema.get("paths", {}).values():
                for operation in item.values():
                    responses = operation.get("responses", {})
                    if "422" in responses:
                        responses["422"] = {
                            "description": "The body does not fit its schema; the message names the field.",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}},
                        }
            schema.get("components", {}).get("schemas", {}).pop("HTTPValidationError", None)
            schema.get("components", {}).get("schemas", {}).pop("ValidationError", None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
