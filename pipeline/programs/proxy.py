"""The per-episode model proxy: an OpenAI-compatible endpoint for each episode, in front of any OpenAI-compatible
upstream (llama.cpp's server, `agentloop serve`, vLLM), that records every model call the program makes.

`ModelProxy(upstream_base_url)` routes `/episodes/{episode_id}/v1/chat/completions` and `…/v1/models`;
`open(episode_id)` gives the episode its base URL (what `ProgramEpisode.model_base_url` carries), `calls(episode_id)`
the calls recorded so far, `failures(episode_id)` the upstream's failures, `close(episode_id)` both, after which the
episode's URL answers 404. Run it on its own (`start()`: a uvicorn server on a thread) or route `routes()` in an app of
your own and set `public_url`.

Each call is forwarded as the program sent it (its model name, messages, tools and sampling settings; its API key is
replaced by the proxy's own `api_key` for the upstream) and recorded as a `ModelCall`: what the program sent, each
completion (message, tool calls, finish reason), the usage, the latency, and the token ids and their log-probabilities
where the upstream returns them. To get them the proxy asks for them (`logprobs: true`, and vLLM's
`return_token_ids: true`) unless the program set those fields itself; an upstream that refuses the extra fields is
asked once more without them and never again, and what the program did not ask for is taken out of its answer. Ids are
read from vLLM's `token_ids` / `prompt_token_ids`, a choice's `tokens`, or the ids in `logprobs.content[]` (llama.cpp's
`id`, vLLM's `token_id:N`); `agentloop serve` answers `return_token_ids` as vLLM does. Where the upstream returns none
(`token_ids` stays None), training re-renders the text.

Failures are named by whose they are. The upstream unreachable, timing out, answering 5xx or 429, or answering what
is not a chat completion is an infrastructure failure: the program is answered 502 (504 for a timeout) in OpenAI's
error shape and the failure is recorded on the episode, so the harness can exclude the trial instead of blaming the
program. The upstream's 4xx (a prompt too long, a bad tool schema, an unknown model) is the program's request: it is
forwarded as it came and recorded as a call with its `status` and `error`. `stream: true` is refused with a 400
(`code: "unsupported"`) and not forwarded: the proxy records whole completions only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from pipeline.errors import InfrastructureError, InputError

EPISODE_PARAM = "episode_id"
"""The path parameter naming the episode (`/episodes/{episode_id}/v1/...`)."""
ROUTE_PREFIX = "/episodes/{episode_id}/v1"
_ASKED = ("logprobs", "return_token_ids")
"""The request fields the proxy adds (when the program did not set them) to get the sampled token ids back."""
_INFRASTRUCTURE_STATUSES = frozenset({408, 429})
"""Upstream statuses below 500 that say the upstream could not serve now, not that the request was wrong."""


# ---- what is recorded ---------------------------------------------------------------------------------------------
class Usage(BaseModel):
    """The token counts the upstream reported for one call (`usage`)."""

    model_config = ConfigDict(extra="allow")

    prompt_tokens: int = Field(default=0, description="Tokens in the prompt the upstream rendered.")
    completion_tokens: int = Field(default=0, description="Tokens the upstream sampled, over all choices.")
    total_tokens: int = Field(default=0, description="prompt_tokens + completion_tokens.")


class Completion(BaseModel):
    """One choice of a chat completion, as the upstream sampled it."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(default=0, description="The choice's index (0 unless the program asked for n > 1).")
    message: dict[str, Any] = Field(
        description="The assistant message as the upstream returned it: role, content, tool_calls (OpenAI's shape)."
    )
    finish_reason: str | None = Field(default=None, description="stop, length, tool_calls, … as the upstream said.")
    token_ids: list[int] | None = Field(
        default=None,
        description="The ids of the tokens sampled, in order, where the upstream returned them; None where it did"
        " not (then training re-tokenizes the message).",
    )
    logprobs: list[float] | None = Field(
        default=None, description="The log-probability of each sampled token, where the upstream returned them."
    )


class ModelCall(BaseModel):
    """One model call of an episode's program: what it sent, what the upstream answered, and how long it took."""

    model_config = ConfigDict(extra="forbid")

    episode_id: str = Field(description="The episode whose base URL the call came to.")
    index: int = Field(description="The call's place in the episode, from 0, in the order the calls started.")
    started_at: float = Field(description="When the call reached the proxy (Unix time, seconds).")
    latency_s: float = Field(description="Seconds from forwarding the request to the upstream's full answer.")
    model: str | None = Field(default=None, description="The model name the program asked for.")
    messages: list[dict[str, Any]] = Field(description="The messages the program sent, exactly (OpenAI's shape).")
    tools: list[dict[str, Any]] | None = Field(
        default=None, description="The tool schemas the program sent (None: it sent none)."
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Every other field of the program's request (temperature, max_tokens, tool_choice, seed, …).",
    )
    status: int = Field(description="The upstream's HTTP status, forwarded to the program (200, or its 4xx).")
    error: str | None = Field(default=None, description="The upstream's error message when status is not 2xx.")
    choices: list[Completion] = Field(default_factory=list, description="The completions (empty for an error).")
    usage: Usage | None = Field(default=None, description="The token counts, where the upstream reported them.")
    prompt_token_ids: list[int] | None = Field(
        default=None, description="The ids of the prompt as the upstream tokenized it, where it returned them."
    )
    response: dict[str, Any] | None = Field(
        default=None, description="The upstream's whole answer as it came (before the proxy took out its extras)."
    )

    @property
    def message(self) -> dict[str, Any] | None:
        """The first choice's assistant message (None for an error)."""
        return self.choices[0].message if self.choices else None

    @property
    def finish_reason(self) -> str | None:
        return self.choices[0].finish_reason if self.choices else None

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The first choice's tool calls (OpenAI's shape), empty when it made none."""
        return list((self.message or {}).get("tool_calls") or [])

    @property
    def token_ids(self) -> list[int] | None:
        """The first choice's sampled token ids, where the upstream returned them."""
        return self.choices[0].token_ids if self.choices else None


FailureKind = Literal["unreachable", "timeout", "server_error", "bad_response"]


class UpstreamFailure(BaseModel):
    """A model call the upstream failed: infrastructure, not the program's fault (the trial is excluded)."""

    model_config = ConfigDict(extra="forbid")

    episode_id: str = Field(description="The episode whose call failed.")
    at: float = Field(description="When the call reached the proxy (Unix time, seconds).")
    latency_s: float = Field(description="Seconds from forwarding the request to the failure.")
    kind: FailureKind = Field(
        description="unreachable: the connection was refused or dropped; timeout: no answer within the proxy's"
        " timeout; server_error: the upstream answered 5xx (or 408 / 429); bad_response: a 2xx that is not a chat"
        " completion."
    )
    status: int = Field(description="What the program was answered: 502, or 504 for a timeout.")
    upstream_status: int | None = Field(default=None, description="The upstream's HTTP status, where it answered.")
    message: str = Field(description="One line: what failed, naming the upstream URL.")
    request: dict[str, Any] | None = Field(
        default=None, description="The program's request as it came (None for /models), to replay the failure."
    )


class EpisodeRecord(BaseModel):
    """Everything the proxy recorded for one episode (what `close()` returns)."""

    model_config = ConfigDict(extra="forbid")

    episode_id: str
    calls: list[ModelCall] = Field(default_factory=list, description="Every answered call, in order.")
    failures: list[UpstreamFailure] = Field(default_factory=list, description="Every infrastructure failure.")

    def infrastructure_error(self) -> UpstreamFailedError | None:
        """The error that excludes the episode's trial when the upstream failed any of its calls (even one the
        program retried with success: its turn ran on a model that was not there), else None."""
        if not self.failures:
            return None
        first = self.failures[0]
        more = f" (and {len(self.failures) - 1} more)" if len(self.failures) > 1 else ""
        return UpstreamFailedError(f"episode {self.episode_id}: the model failed: {first.kind}: {first.message}{more}")


class ProxyError(InputError):
    """The proxy was asked for an episode it does not hold, or set up wrongly; the message names which."""


class UpstreamFailedError(InfrastructureError):
    """The upstream model failed an episode's call (`EpisodeRecord.infrastructure_error`): the trial is excluded."""


class UpstreamAnswerError(InfrastructureError):
    """The upstream answered 2xx with what is not a chat completion (recorded as a `bad_response` failure)."""


class ProxyUnavailableError(InfrastructureError):
    """The proxy's own server did not start."""


# ---- the proxy ----------------------------------------------------------------------------------------------------
class ModelProxy:
    """An OpenAI-compatible endpoint per episode in front of `upstream_base_url` (…/v1), recording every call.

    `api_key`: sent to the upstream as `Authorization: Bearer …` (None: no header); the program's own key is never
    forwarded. `timeout`: seconds one upstream call may take before it is a timeout (504). `public_url`: where the
    proxy's routes are served (`http://HOST:PORT`), when they are served by an app of your own; `start()` sets it.
    `ask_token_ids`: ask the upstream for the sampled token ids (see the module docstring).

    >>> ModelProxy("localhost:8000")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pipeline.programs.proxy.ProxyError: ModelProxy: upstream_base_url must be an http(s) URL ...
    """

    def __init__(
        self,
        upstream_base_url: str,
        api_key: str | None = None,
        timeout: float = 120.0,
        *,
        public_url: str | None = None,
        ask_token_ids: bool = True,
    ) -> None:
        if not isinstance(upstream_base_url, str) or not upstream_base_url.startswith(("http://", "https://")):
            raise ProxyError(f"ModelProxy: upstream_base_url must be an http(s) URL (…/v1), got {upstream_base_url!r}")
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not timeout > 0:
            raise ProxyError(f"ModelProxy: timeout must be a positive number of seconds, got {timeout!r}")
        if api_key is not None and not isinstance(api_key, str):
            raise ProxyError(f"ModelProxy: api_key must be a string or None, got {type(api_key).__name__}")
        self.upstream = upstream_base_url.rstrip("/")
        self.api_key, self.timeout = api_key, float(timeout)
        self.public_url = public_url.rstrip("/") if public_url else None
        self._ask = bool(ask_token_ids)
        self._lock = threading.Lock()
        self._episodes: dict[str, EpisodeRecord] = {}
        self._started: dict[str, int] = {}
        self._http: dict[int, httpx.AsyncClient] = {}
        self._app: Starlette | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None

    # ---- episodes -------------------------------------------------------------------------------------------------
    def open(self, episode_id: str) -> str:
        """Start recording `episode_id`; its base URL (`{public_url}/episodes/{episode_id}/v1`)."""
        if not isinstance(episode_id, str) or not episode_id or "/" in episode_id:
            raise ProxyError(f"ModelProxy.open: episode_id must be a non-empty string without '/', got {episode_id!r}")
        if self.public_url is None:
            raise ProxyError("ModelProxy.open: the proxy is not served yet: call start() or set public_url")
        with self._lock:
            if episode_id in self._episodes:
                raise ProxyError(f"ModelProxy.open: episode {episode_id!r} is already open")
            self._episodes[episode_id] = EpisodeRecord(episode_id=episode_id)
            self._started[episode_id] = 0
        return self.base_url(episode_id)

    def base_url(self, episode_id: str) -> str:
        """The episode's OpenAI-compatible base URL (what a program gives its client as `base_url`)."""
        if self.public_url is None:
            raise ProxyError("ModelProxy.base_url: the proxy is not served yet: call start() or set public_url")
        return f"{self.public_url}/episodes/{episode_id}/v1"

    def calls(self, episode_id: str) -> list[ModelCall]:
        """The episode's answered calls so far, in the order they started."""
        with self._lock:
            return sorted(self._record(episode_id, "calls").calls, key=lambda c: c.index)

    def failures(self, episode_id: str) -> list[UpstreamFailure]:
        """The episode's infrastructure failures so far (empty: the upstream never failed it)."""
        with self._lock:
            return list(self._record(episode_id, "failures").failures)

    def close(self, episode_id: str) -> EpisodeRecord:
        """Stop serving `episode_id` (its URL answers 404 from now on); everything recorded for it."""
        with self._lock:
            record = self._record(episode_id, "close")
            del self._episodes[episode_id], self._started[episode_id]
        record.calls.sort(key=lambda c: c.index)
        return record

    def _record(self, episode_id: str, what: str) -> EpisodeRecord:
        record = self._episodes.get(episode_id)
        if record is None:
            raise ProxyError(f"ModelProxy.{what}: unknown or closed episode {episode_id!r}")
        return record

    # ---- serving --------------------------------------------------------------------------------------------------
    def routes(self) -> list[Route]:
        """The proxy's routes, for an app of your own (then set `public_url` to where it is served)."""
        return [
            Route(f"{ROUTE_PREFIX}/chat/completions", self._chat, methods=["POST"]),
            Route(f"{ROUTE_PREFIX}/models", self._models, methods=["GET"]),
            Route(ROUTE_PREFIX + "/{rest:path}", self._unknown, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
        ]

    @property
    def app(self) -> ASGIApp:
        """The proxy as an ASGI app (its routes and nothing else)."""
        if self._app is None:
            self._app = Starlette(routes=self.routes(), lifespan=self._lifespan)
        return self._app

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield
        await self._close_http()

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve the proxy with uvicorn on a daemon thread at `host:port` (0: a free port); its public URL."""
        import uvicorn

        if self._thread is not None:
            raise ProxyError("ModelProxy.start: already started")
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            sock.close()
            raise ProxyUnavailableError(f"ModelProxy.start: cannot listen on {host}:{port}: {exc}") from None
        bound = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="model-proxy", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not self._server.started:
            self.stop()
            raise ProxyUnavailableError(f"ModelProxy.start: the server on {host}:{bound} did not start")
        shown = f"[{host}]" if ":" in host else host
        self.public_url = f"http://{shown}:{bound}"
        return self.public_url

    def stop(self) -> None:
        """Stop the server `start()` started (recorded episodes stay readable); calling it twice is harmless."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self._server = self._thread = None

    def __enter__(self) -> ModelProxy:
        if self.public_url is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- the handlers ---------------------------------------------------------------------------------------------
    async def _models(self, request: Request) -> JSONResponse:
        episode_id = request.path_params[EPISODE_PARAM]
        if not self._is_open(episode_id):
            return _unknown_episode(episode_id)
        started = time.perf_counter()
        try:
            answer = await self._client().get(f"{self.upstream}/models", headers=self._headers())
        except httpx.HTTPError as exc:
            failure = self._failure(episode_id, exc, None, time.time(), time.perf_counter() - started, "models")
            return _error(failure.status, failure.message, "upstream_error", failure.kind)
        return JSONResponse(_json_or_none(answer) or {}, status_code=answer.status_code)

    async def _unknown(self, request: Request) -> JSONResponse:
        episode_id = request.path_params[EPISODE_PARAM]
        if not self._is_open(episode_id):
            return _unknown_episode(episode_id)
        path = request.path_params.get("rest", "")
        return _error(404, f"the model proxy serves /chat/completions and /models, not /{path}", code="not_found")

    async def _chat(self, request: Request) -> JSONResponse:
        episode_id = request.path_params[EPISODE_PARAM]
        if not self._is_open(episode_id):
            return _unknown_episode(episode_id)
        try:
            body = json.loads(await request.body())
        except (ValueError, UnicodeDecodeError):
            return _error(400, "the request body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "the request body must be a JSON object (a chat completion request)")
        if body.get("stream"):
            return _error(
                400,
                "stream=true is not supported by the model proxy: it records whole completions; ask without streaming",
                code="unsupported",
            )
        index = self._next_index(episode_id)
        if index is None:
            return _unknown_episode(episode_id)
        at, started = time.time(), time.perf_counter()
        added = [k for k in _ASKED if k not in body] if self._ask else []
        sent = {**body, **dict.fromkeys(added, True)}
        try:
            answer = await self._post(sent)
            if added and answer.status_code in (400, 422):  # an upstream refusing the extra fields: ask plainly
                plain = await self._post(body)
                if plain.status_code not in (400, 422):
                    self._ask, added, answer = False, [], plain
        except httpx.HTTPError as exc:
            failure = self._failure(
                episode_id, exc, None, at, time.perf_counter() - started, "chat/completions", request=body
            )
            return _error(failure.status, failure.message, "upstream_error", failure.kind)
        latency = time.perf_counter() - started
        payload = _json_or_none(answer)
        status = answer.status_code
        if status >= 500 or status in _INFRASTRUCTURE_STATUSES:
            failure = self._failure(episode_id, None, answer, at, latency, "chat/completions", request=body)
            return _error(failure.status, failure.message, "upstream_error", failure.kind)
        if status >= 400:
            self._add_call(episode_id, _refused_call(episode_id, index, at, latency, body, status, payload, answer))
            return JSONResponse(payload if payload is not None else {"error": {"message": answer.text}}, status)
        if not isinstance(payload, dict) or not isinstance(payload.get("choices"), list):
            failure = self._failure(episode_id, None, answer, at, latency, "chat/completions", bad=True, request=body)
            return _error(failure.status, failure.message, "upstream_error", failure.kind)
        try:
            call = _answered_call(episode_id, index, at, latency, body, status, payload)
        except (UpstreamAnswerError, ValueError, TypeError) as exc:  # ValueError: pydantic's, a field mistyped
            failure = self._failure(
                episode_id, None, answer, at, latency, "chat/completions", bad=True, why=str(exc), request=body
            )
            return _error(failure.status, failure.message, "upstream_error", failure.kind)
        self._add_call(episode_id, call)
        return JSONResponse(_without(payload, added), status)

    # ---- helpers --------------------------------------------------------------------------------------------------
    def _is_open(self, episode_id: str) -> bool:
        with self._lock:
            return episode_id in self._episodes

    def _next_index(self, episode_id: str) -> int | None:
        with self._lock:
            if episode_id not in self._started:
                return None
            index = self._started[episode_id]
            self._started[episode_id] = index + 1
            return index

    def _add_call(self, episode_id: str, call: ModelCall) -> None:
        with self._lock:
            record = self._episodes.get(episode_id)
            if record is not None:  # closed meanwhile: the call is answered, not recorded
                record.calls.append(call)

    def _failure(
        self,
        episode_id: str,
        exc: BaseException | None,
        answer: httpx.Response | None,
        at: float,
        latency: float,
        path: str,
        *,
        bad: bool = False,
        why: str = "",
        request: dict[str, Any] | None = None,
    ) -> UpstreamFailure:
        url = f"{self.upstream}/{path}"
        kind: FailureKind
        if isinstance(exc, httpx.TimeoutException):
            kind, message = "timeout", f"upstream {url}: no answer in {self.timeout:g} s"
        elif exc is not None:
            kind, message = "unreachable", f"upstream {url}: {type(exc).__name__}: {exc}".rstrip(": ")
        elif answer is not None and bad:
            kind = "bad_response"
            message = f"upstream {url}: answered {answer.status_code} without a chat completion" + (
                f" ({why})" if why else ""
            )
        else:
            assert answer is not None
            kind = "server_error"
            message = f"upstream {url}: answered {answer.status_code}: {_error_text(_json_or_none(answer), answer)}"
        upstream_status = answer.status_code if answer is not None else None
        status = 504 if kind == "timeout" or upstream_status == 504 else 502
        failure = UpstreamFailure(
            episode_id=episode_id,
            at=at,
            latency_s=latency,
            kind=kind,
            status=status,
            upstream_status=upstream_status,
            message=" ".join(message.split())[:500],
            request=request,
        )
        with self._lock:
            record = self._episodes.get(episode_id)
            if record is not None:
                record.failures.append(failure)
        return failure

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    async def _post(self, body: dict[str, Any]) -> httpx.Response:
        return await self._client().post(f"{self.upstream}/chat/completions", json=body, headers=self._headers())

    def _client(self) -> httpx.AsyncClient:
        """One pooled client per event loop the proxy is served on."""
        loop = id(asyncio.get_running_loop())
        client = self._http.get(loop)
        if client is None or client.is_closed:
            timeout = httpx.Timeout(self.timeout, connect=min(10.0, self.timeout))
            client = self._http[loop] = httpx.AsyncClient(timeout=timeout)
        return client

    async def _close_http(self) -> None:
        client = self._http.pop(id(asyncio.get_running_loop()), None)
        if client is not None:
            await client.aclose()


# ---- reading an answer --------------------------------------------------------------------------------------------
def _json_or_none(answer: httpx.Response) -> Any:
    try:
        return answer.json()
    except ValueError:
        return None


def _error_text(payload: Any, answer: httpx.Response) -> str:
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if payload.get("detail"):
            return str(payload["detail"])
    return answer.text[:300] or answer.reason_phrase


def _request_parts(body: dict[str, Any]) -> dict[str, Any]:
    """What a call sent (model, messages, tools, the other parameters), as ModelCall's fields."""
    messages = body.get("messages")
    tools = body.get("tools")
    return {
        "model": body.get("model") if isinstance(body.get("model"), str) else None,
        "messages": list(messages) if isinstance(messages, list) else [],
        "tools": list(tools) if isinstance(tools, list) else None,
        "params": {k: v for k, v in body.items() if k not in ("model", "messages", "tools")},
    }


def _refused_call(
    episode_id: str,
    index: int,
    at: float,
    latency: float,
    body: dict[str, Any],
    status: int,
    payload: Any,
    answer: httpx.Response,
) -> ModelCall:
    return ModelCall(
        episode_id=episode_id,
        index=index,
        started_at=at,
        latency_s=latency,
        **_request_parts(body),
        status=status,
        error=_error_text(payload, answer),
        response=payload if isinstance(payload, dict) else None,
    )


def _answered_call(
    episode_id: str, index: int, at: float, latency: float, body: dict[str, Any], status: int, payload: dict[str, Any]
) -> ModelCall:
    choices = []
    for position, choice in enumerate(payload["choices"]):
        if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
            raise UpstreamAnswerError(f"choices[{position}] has no message")
        ids, logprobs = _sampled(choice)
        choices.append(
            Completion(
                index=choice.get("index", position) if isinstance(choice.get("index"), int) else position,
                message=choice["message"],
                finish_reason=choice.get("finish_reason"),
                token_ids=ids,
                logprobs=logprobs,
            )
        )
    usage = payload.get("usage")
    prompt_ids = _int_list(payload.get("prompt_token_ids"))
    if prompt_ids is None and payload["choices"] and isinstance(payload["choices"][0], dict):
        prompt_ids = _int_list(payload["choices"][0].get("prompt_token_ids"))
    return ModelCall(
        episode_id=episode_id,
        index=index,
        started_at=at,
        latency_s=latency,
        **_request_parts(body),
        status=status,
        choices=choices,
        usage=Usage.model_validate(usage) if isinstance(usage, dict) else None,
        prompt_token_ids=prompt_ids,
        response=payload,
    )


def _int_list(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(value)
    return None


def _sampled(choice: dict[str, Any]) -> tuple[list[int] | None, list[float] | None]:
    """The sampled token ids and their log-probabilities in a choice, wherever the upstream put them."""
    ids = _int_list(choice.get("token_ids")) or _int_list(choice.get("tokens"))
    logprobs: list[float] | None = None
    entries = (choice.get("logprobs") or {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
    if isinstance(entries, list) and entries and all(isinstance(e, dict) for e in entries):
        values = [e.get("logprob") for e in entries]
        if all(isinstance(v, int | float) for v in values):
            logprobs = [float(v) for v in values if isinstance(v, int | float)]
        if ids is None:
            ids = _int_list([_entry_id(e) for e in entries])
    return ids, logprobs


def _entry_id(entry: dict[str, Any]) -> int | None:
    """A logprobs entry's token id: llama.cpp's `id`, or vLLM's `token_id:N` token (return_tokens_as_token_ids)."""
    for key in ("id", "token_id"):
        if isinstance(entry.get(key), int):
            return int(entry[key])
    token = entry.get("token")
    if isinstance(token, str) and token.startswith("token_id:") and token[9:].isdigit():
        return int(token[9:])
    return None


def _without(payload: dict[str, Any], added: list[str]) -> dict[str, Any]:
    """The upstream's answer without what the proxy asked for and the program did not."""
    if not added:
        return payload
    out = dict(payload)
    if "return_token_ids" in added:
        out.pop("prompt_token_ids", None)
    choices = []
    for choice in out.get("choices") or []:
        if isinstance(choice, dict):
            choice = dict(choice)
            if "logprobs" in added and "logprobs" in choice:
                choice["logprobs"] = None
            if "return_token_ids" in added:
                choice.pop("token_ids", None)
                choice.pop("prompt_token_ids", None)
        choices.append(choice)
    out["choices"] = choices
    return out


def _error(status: int, message: str, kind: str = "invalid_request_error", code: str | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": code}}, status_code=status)


def _unknown_episode(episode_id: str) -> JSONResponse:
    return _error(404, f"unknown or closed episode {episode_id!r}", code="episode_not_found")


_SHARED: dict[tuple[str, str | None], ModelProxy] = {}
_SHARED_LOCK = threading.Lock()


def model_proxy(upstream_base_url: str, api_key: str | None = None, timeout: float = 120.0) -> ModelProxy:
    """The process's proxy in front of `upstream_base_url` (one per upstream and key), started on first use on
    127.0.0.1; every episode of a run opens its own URL on it."""
    key = (upstream_base_url.rstrip("/") if isinstance(upstream_base_url, str) else upstream_base_url, api_key)
    with _SHARED_LOCK:
        proxy = _SHARED.get(key)
        if proxy is None:
            proxy = ModelProxy(upstream_base_url, api_key, timeout)
            proxy.start()
            _SHARED[key] = proxy
        return proxy
