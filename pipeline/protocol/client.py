"""An environment served over HTTP (`agentloop env serve`), as an `EnvironmentProtocol` in process.

`ServedEnvironment(base_url, world)` is one episode at a time of one served world: `init` opens an episode on the
service (closing the one it had), the other functions call it, `close` closes it. It returns the protocol's models.
Every instance for one base URL shares one `httpx.Client` (thread-safe, pooled connections).

What can go wrong is typed for the loop: a request the service refuses as the caller's mistake (a 4xx: a body
naming a field, an unknown table or world, a call before `init`) is `EnvironmentRequestError` (an `InputError`)
carrying the service's message; the service failing (a 5xx), not answering in time, refusing the connection, or
forgetting an episode this client opened (it expired, or the service restarted) is `EnvironmentUnavailableError`
(an `InfrastructureError`: the trial is retried with a fresh episode, never counted against the agent). `close()`
never raises for an unavailable service: an episode it could not close expires there after its idle time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from pipeline.errors import InfrastructureError, InputError
from pipeline.protocol.environment import (
    SIDES,
    CallRecord,
    EnvironmentMetadata,
    EnvironmentState,
    Reward,
    Side,
    ToolResult,
)

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 60.0
"""Seconds one request may take (connect, send, wait, read) before the service counts as unavailable."""


class EnvironmentRequestError(InputError, ValueError):
    """The service refused a request as the caller's mistake (HTTP 4xx); the message is the service's own."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EnvironmentUnavailableError(InfrastructureError):
    """The service failed (5xx), did not answer in time, refused the connection, or lost an open episode."""


_CLIENTS: dict[str, httpx.Client] = {}
_CLIENTS_LOCK = threading.Lock()


def _client(base_url: str) -> httpx.Client:
    """The one pooled client for a base URL (created on first use; shared by threads)."""
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(base_url)
        if client is None:
            limits = httpx.Limits(max_connections=256, max_keepalive_connections=64)
            client = _CLIENTS[base_url] = httpx.Client(base_url=base_url, limits=limits, trust_env=False)
        return client


def _base(base_url: str) -> str:
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise EnvironmentRequestError(f"base_url: expected http://HOST:PORT (a served environment), got {base_url!r}")
    return base_url.rstrip("/")


def _request(base_url: str, method: str, path: str, timeout: float, body: Any = None) -> Any:
    """One request; its JSON reply (None for 204), or the typed error for what went wrong."""
    url = f"{base_url}{path}"
    try:
        reply = _client(base_url).request(method, path, json=body, timeout=timeout)
    except httpx.TimeoutException as exc:
        raise EnvironmentUnavailableError(
            f"{method} {url}: no answer within {timeout:g} s ({type(exc).__name__})"
        ) from None
    except httpx.HTTPError as exc:
        raise EnvironmentUnavailableError(f"{method} {url}: {type(exc).__name__}: {exc or 'no reply'}") from None
    if reply.status_code >= 500:
        raise EnvironmentUnavailableError(f"{method} {url}: HTTP {reply.status_code}: {_detail(reply)}")
    if reply.status_code >= 400:
        raise EnvironmentRequestError(_detail(reply), reply.status_code)
    if reply.status_code == 204 or not reply.content:
        return None
    try:
        return reply.json()
    except ValueError:
        raise EnvironmentUnavailableError(f"{method} {url}: the reply is not JSON ({reply.text[:80]!r})") from None


def _detail(reply: httpx.Response) -> str:
    """The service's message (`{"detail": ...}`), else the reply's text, on one line."""
    try:
        detail = reply.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    text = detail if isinstance(detail, str) else (str(detail) if detail is not None else reply.text[:300])
    return " ".join(text.split()) or f"HTTP {reply.status_code}"


def _as(model: type[BaseModel], value: Any, what: str) -> Any:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or model.__name__
        raise EnvironmentUnavailableError(
            f"{what}: the service's reply is not a {model.__name__} ({where}: {first['msg']})"
        ) from None


def _json(value: Any, name: str) -> Any:
    """A model or mapping argument as JSON for the wire."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=False)
    if isinstance(value, Mapping):
        return dict(value)
    raise EnvironmentRequestError(f"argument {name}: expected a mapping or a model, got {type(value).__name__}")


def served_worlds(base_url: str, *, timeout: float = DEFAULT_TIMEOUT_S) -> list[str]:
    """The world names a service at `base_url` serves."""
    reply = _request(_base(base_url), "GET", "/worlds", timeout)
    worlds = reply.get("worlds") if isinstance(reply, dict) else None
    if not isinstance(worlds, list) or not all(isinstance(w, str) for w in worlds):
        raise EnvironmentUnavailableError(f"GET {base_url}/worlds: expected {{'worlds': [names]}}, got {reply!r:.80}")
    return worlds


class ServedEnvironment:
    """One world of a served environment, one episode at a time (see the module docstring).

    Thread-safe as far as the service is: calls into one episode are serialised there. `timeout` bounds each
    request in seconds."""

    def __init__(self, base_url: str, world: str, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        if not isinstance(world, str) or not world:
            raise EnvironmentRequestError(f"world: expected a world name, got {world!r}")
        self.base_url, self.world, self.timeout = _base(base_url), world, float(timeout)
        self.episode: str | None = None
        self.mcp_url: str | None = None
        self._metadata: EnvironmentMetadata | None = None

    def __repr__(self) -> str:
        return f"ServedEnvironment({self.base_url!r}, {self.world!r}, episode={'open' if self.episode else None})"

    # ---- the six functions --------------------------------------------------------------------------------------
    def get_metadata(self) -> EnvironmentMetadata:
        if self._metadata is None:
            reply = self._call("GET", f"/worlds/{self._quoted_world}/metadata")
            self._metadata = _as(EnvironmentMetadata, reply, f"{self.base_url} metadata")
        return self._metadata

    def init(self, task: Mapping[str, Any] | None = None, *, authenticated_user_id: str | None = None) -> Any:
        """Open a fresh episode in the task's starting state (the previous one closed); its `EnvironmentState`."""
        self.close()
        body = {
            "world": self.world,
            "task": None if task is None else _json(task, "task"),
            "authenticated_user_id": authenticated_user_id,
        }
        reply = self._call("POST", "/episodes", body)
        if not isinstance(reply, dict) or not isinstance(reply.get("episode"), str):
            raise EnvironmentUnavailableError(f"POST {self.base_url}/episodes: no episode id in {reply!r:.80}")
        self.episode, self.mcp_url = reply["episode"], reply.get("mcp_url")
        return _as(EnvironmentState, reply.get("state"), f"{self.base_url} init")

    def run(self, call: Mapping[str, Any], side: Side = "assistant") -> Any:
        """One tool call on `side` (a mapping {name, arguments} or a model with those fields); its `ToolResult`."""
        _side(side)
        reply = self._episode_call("run", "POST", "/run", {"call": _json(call, "call"), "side": side})
        return _as(ToolResult, reply, f"{self.base_url} run")

    def state(self) -> Any:
        return _as(EnvironmentState, self._episode_call("state", "GET", "/state"), f"{self.base_url} state")

    def query_data(self, table: str, predicate: Mapping[str, Any] | None = None) -> Mapping[str, dict[str, Any]]:
        """key → record of `table`'s records whose fields equal `predicate`: the episode's, or the base world's
        before `init`."""
        if not isinstance(table, str):
            raise EnvironmentRequestError(f"argument table: expected a table name, got {type(table).__name__}")
        if predicate is not None and not isinstance(predicate, Mapping):
            raise EnvironmentRequestError(
                f"argument predicate: expected a mapping {{dotted.field: value}} or None (a served environment takes"
                f" no Python predicate), got {type(predicate).__name__}"
            )
        body = {"table": table, "predicate": None if predicate is None else dict(predicate)}
        if self.episode is None:
            reply = self._call("POST", f"/worlds/{self._quoted_world}/query", body)
        else:
            reply = self._episode_call("query_data", "POST", "/query", body)
        if not isinstance(reply, dict):
            raise EnvironmentUnavailableError(f"{self.base_url} query: expected an object, got {reply!r:.80}")
        return reply

    def reward(self) -> Any:
        return _as(Reward, self._episode_call("reward", "GET", "/reward"), f"{self.base_url} reward")

    def say(self, text: str, side: Side = "assistant") -> None:
        _side(side)
        if not isinstance(text, str):
            raise EnvironmentRequestError(f"argument text: expected a string, got {type(text).__name__}")
        self._episode_call("say", "POST", "/say", {"text": text, "side": side})

    def calls(self) -> list[Any]:
        reply = self._episode_call("calls", "GET", "/calls")
        if not isinstance(reply, list):
            raise EnvironmentUnavailableError(f"{self.base_url} calls: expected a list, got {reply!r:.80}")
        return [_as(CallRecord, c, f"{self.base_url} calls") for c in reply]

    def close(self) -> None:
        """Close the episode, if one is open. Never raises for an unavailable service (the episode expires
        there); calling it twice is harmless."""
        episode, self.episode, self.mcp_url = self.episode, None, None
        if episode is None:
            return
        try:
            _request(self.base_url, "DELETE", f"/episodes/{episode}", self.timeout)
        except (EnvironmentUnavailableError, EnvironmentRequestError) as exc:
            log.warning("closing episode of %s at %s: %s (it expires there)", self.world, self.base_url, exc)

    # ---- internals ----------------------------------------------------------------------------------------------
    @property
    def _quoted_world(self) -> str:
        return quote(self.world, safe="")

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        return _request(self.base_url, method, path, self.timeout, body)

    def _episode_call(self, what: str, method: str, path: str, body: Any = None) -> Any:
        episode = self.episode
        if episode is None:
            raise EnvironmentRequestError(f"{what}() before init(task): no episode is open on {self.base_url}")
        try:
            return self._call(method, f"/episodes/{episode}{path}", body)
        except EnvironmentRequestError as exc:
            if exc.status == 404 and self.episode == episode:
                self.episode = None
                raise EnvironmentUnavailableError(
                    f"{self.base_url}: the service lost this client's episode of {self.world!r} ({exc})"
                ) from None
            raise


def _side(side: Any) -> None:
    if side not in SIDES:
        raise EnvironmentRequestError(f"side {side!r}: expected one of {', '.join(map(repr, SIDES))}")
