"""One client for every OpenAI-compatible chat-completions endpoint: the agent, the LLM user and the LLM judge.

Requests go through the official `openai` SDK (its client's `post` to `/chat/completions`, parsed as a
`ChatCompletion`) with the SDK's own retries off (`max_retries=0`); the retry policy is ours, around each call:
transient failures (timeouts, connection errors, 408/409/425/429/5xx) are retried with capped exponential backoff
and jitter, waiting at least what `Retry-After` asks (delta-seconds or an HTTP-date, capped). When the retries run
out, or the endpoint refuses the request for good (401, 404, ...), the call raises `InfrastructureError`, so the
trial is retried or left out, never scored as the agent's failure. Two refusals mean something else (see
`openai_errors`): a prompt over the model's context raises `ContextLengthError` (the agent's episode ends there, as
with a local model whose context is full), and a setting the model does not accept (`temperature` on a reasoning
model) raises `UnsupportedSettingError`, which stops the run with the spec setting that fixes it.

Both bounds are wall-clock deadlines, which the SDK's timeouts (httpx per-read timeouts) are not: `timeout_s`
holds for one attempt as a whole (connecting, sending and every byte of the reply), so a server that trickles a
byte a second cannot hold a call open, and `deadline_s` holds for the call with all its retries and back-off.
Each thread gives the SDK an HTTP client of its own (`http_client=`); a timer closes that client when the
attempt's time is up, which ends a read that waits or trickles without touching other threads' requests, and the
thread's next attempt builds a fresh one.

An attempt that times out after its request was delivered (the connection made, the body sent, no reply in
time) means the server is up and still generating: a reply longer than `timeout_s` allows. Sending the identical
request again would only make the server generate it again, so by default it is not resent: the call raises
`ReplyTimeoutError` at once, naming the bound to change (`timeout_s`, or a request's `max_tokens`).
`resend_timed_out` restores resending (a hosted API that now and then leaves a request hanging). Failures before
delivery (refused or timed-out connections: the server down) are retried as before.

A reply is accepted up to `max_reply_bytes` (1 MB by default, `AGENTLOOP_MAX_REPLY_BYTES`): a longer one, whether
it declares its length or streams it, is cut off as it arrives and the call raises `ReplyTooLargeError` at once
(an infrastructure error naming the bound; resending would only bring the same flood). So a run stores at most
that much per reply: an endpoint that answered 50 MB a turn once made a 1.2 GB run folder of 4 trials.

Endpoint settings come from the environment: `AGENTLOOP_BASE_URL` / `AGENTLOOP_API_KEY` first, then the usual
`OPENAI_BASE_URL` / `OPENAI_API_KEY`; `AGENTLOOP_TIMEOUT_S`, `AGENTLOOP_DEADLINE_S`, `AGENTLOOP_MAX_RETRIES`,
`AGENTLOOP_BACKOFF_S`, `AGENTLOOP_RESEND_TIMED_OUT`, `AGENTLOOP_MAX_REPLY_BYTES` tune the retries and bounds.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ConfigDict, Field

from pipeline.endpoint.errors import (
    RETRY_STATUS,
    ContextLengthError,
    UnsupportedSettingError,
    is_context_overflow,
    retry_after,
    setting_message,
    unsupported_setting,
)
from pipeline.rollout import InfrastructureError, Usage

__all__ = [
    "RETRY_STATUS",
    "ChatClient",
    "Completion",
    "ContextLengthError",
    "EndpointConfig",
    "ReplyTimeoutError",
    "ReplyTooLargeError",
    "UnsupportedSettingError",
]
log = logging.getLogger(__name__)
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
DEFAULT_MAX_REPLY_BYTES = 1_000_000


class EndpointConfig(BaseModel):
    """Where the endpoint is and how hard to try before giving up on a call."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(default=DEFAULT_BASE_URL, description="Base URL up to /v1, e.g. http://host:8000/v1.")
    api_key: str | None = Field(default=None, description="Bearer token; None sends no Authorization header.")
    timeout_s: float = Field(default=120.0, gt=0, description="Seconds one attempt may take, start to last byte.")
    deadline_s: float | None = Field(
        default=600.0, gt=0, description="Seconds one call may take with all its retries (None: no bound)."
    )
    max_retries: int = Field(default=5, ge=0, description="Retries of a transient failure before giving up.")
    backoff_s: float = Field(default=1.0, ge=0, description="First retry delay; doubles each retry.")
    backoff_cap_s: float = Field(default=30.0, ge=0, description="Longest delay between two tries.")
    max_reply_bytes: int = Field(
        default=DEFAULT_MAX_REPLY_BYTES, ge=1, description="Largest reply body accepted; a longer one fails the call."
    )
    resend_timed_out: bool = Field(
        default=False,
        description="Resend a request that was delivered but got no reply within timeout_s (False: the server is"
        " generating a reply too long for the timeout; resending repeats it, so the call fails at once).",
    )

    @classmethod
    def from_env(cls, **overrides: Any) -> EndpointConfig:
        """Settings from AGENTLOOP_* or OPENAI_* variables; explicit overrides win."""
        env = os.environ
        values: dict[str, Any] = {}
        base = env.get("AGENTLOOP_BASE_URL") or env.get("OPENAI_BASE_URL")
        key = env.get("AGENTLOOP_API_KEY") or env.get("OPENAI_API_KEY")
        if base:
            values["base_url"] = base
        if key:
            values["api_key"] = key
        for name, var in (
            ("timeout_s", "AGENTLOOP_TIMEOUT_S"),
            ("deadline_s", "AGENTLOOP_DEADLINE_S"),
            ("max_retries", "AGENTLOOP_MAX_RETRIES"),
            ("backoff_s", "AGENTLOOP_BACKOFF_S"),
            ("resend_timed_out", "AGENTLOOP_RESEND_TIMED_OUT"),
            ("max_reply_bytes", "AGENTLOOP_MAX_REPLY_BYTES"),
        ):
            if env.get(var):
                values[name] = env[var]
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


@dataclass
class Completion:
    """One chat completion: the first choice's message as the endpoint sent it, and what it cost."""

    message: dict[str, Any]
    finish_reason: str | None
    usage: Usage
    latency_s: float
    attempts: int = 1
    raw: dict[str, Any] = field(default_factory=dict)


class ReplyTimeoutError(InfrastructureError):
    """A delivered request got no reply within the attempt's time: the server is up and generating at length."""


class ReplyTooLargeError(InfrastructureError):
    """The endpoint's reply was longer than `max_reply_bytes` (not retried: it would send the same again)."""


class _Deadline(Exception):
    """The attempt ran out of time (raised in the calling thread, whatever the timer interrupted)."""


def _too_large(url: str, size: str, cap: int) -> str:
    return (
        f"{url}: reply of {size} bytes, over the {cap}-byte bound (max_reply_bytes, AGENTLOOP_MAX_REPLY_BYTES);"
        " not accepted"
    )


@functools.cache
def _traced_transport_class() -> type:
    """httpx's transport (of the httpx package the SDK's client is built on), noting in `state.sent` when a
    request's body has gone out in full (httpcore's trace events), so a timeout can tell a request the server
    holds from one that never reached it."""
    lib = importlib.import_module(openai.DefaultHttpxClient.__mro__[1].__module__.partition(".")[0])

    stream_base: Any = lib.SyncByteStream

    class CappedStream(stream_base):
        """A reply body that stops being read past `cap` bytes."""

        def __init__(self, stream: Any, cap: int, url: str) -> None:
            self.stream, self.cap, self.url = stream, cap, url

        def __iter__(self) -> Any:
            size = 0
            for chunk in self.stream:
                size += len(chunk)
                if size > self.cap:
                    raise ReplyTooLargeError(_too_large(self.url, f"more than {self.cap}", self.cap))
                yield chunk

        def close(self) -> None:
            self.stream.close()

    base: Any = lib.HTTPTransport  # found at run time: the module the SDK's client is built on

    class TracedTransport(base):
        def __init__(self, state: threading.local, max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES, **kwargs: Any):
            super().__init__(**kwargs)
            self.state, self.cap = state, max_reply_bytes

        def handle_request(self, request: Any) -> Any:
            def trace(event: str, info: dict) -> None:
                if event.endswith("send_request_body.complete"):
                    self.state.sent = True

            request.extensions = {**request.extensions, "trace": trace}
            response = super().handle_request(request)
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.cap:
                response.close()
                raise ReplyTooLargeError(_too_large(str(request.url), declared, self.cap))
            response.stream = CappedStream(response.stream, self.cap, str(request.url))
            return response

    return TracedTransport


class ChatClient:
    """Thread-safe synchronous client; picklable (the SDK clients are rebuilt after unpickling)."""

    def __init__(self, config: EndpointConfig | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config or EndpointConfig.from_env()
        self.sleep = sleep
        self._local = threading.local()
        self._https: list[Any] = []
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config, "sleep": self.sleep}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state["config"], state["sleep"])

    def _sdk(self) -> tuple[Any, openai.OpenAI]:
        """This thread's HTTP client and the SDK client over it (new ones after a deadline closed the last)."""
        pair = getattr(self._local, "sdk", None)
        if pair is None or pair[0].is_closed:
            cfg = self.config
            transport = _traced_transport_class()(self._local, cfg.max_reply_bytes)
            http = openai.DefaultHttpxClient(timeout=cfg.timeout_s, transport=transport)
            sdk = openai.OpenAI(
                base_url=cfg.base_url.rstrip("/"),
                api_key=cfg.api_key or "none",  # the SDK insists on a key; without one the header is left out
                max_retries=0,
                timeout=cfg.timeout_s,
                http_client=http,
            )
            pair = self._local.sdk = (http, sdk)
            with self._lock:
                self._https = [h for h in self._https if not h.is_closed] + [http]
        return pair

    def close(self) -> None:
        with self._lock:
            https, self._https = self._https, []
        for http in https:
            http.close()

    def complete(self, body: dict[str, Any]) -> Completion:
        """One chat completion with retries; `body` is the request as the API documents it (model, messages,
        tools, sampling settings; fields the SDK does not name are sent as they are)."""
        cfg = self.config
        t0 = time.perf_counter()
        call_deadline = time.monotonic() + cfg.deadline_s if cfg.deadline_s else None
        last, last_retry_after = "no attempt made", None
        for attempt in range(cfg.max_retries + 1):
            if attempt:
                delay = self._delay(attempt, last_retry_after)
                if call_deadline is not None and time.monotonic() + delay >= call_deadline:
                    break
                self.sleep(delay)
                last_retry_after = None
            now = time.monotonic()
            budget = cfg.timeout_s if call_deadline is None else min(cfg.timeout_s, call_deadline - now)
            if budget <= 0:
                break
            try:
                response = self._attempt(body, now + budget)
                return self._parse(response, time.perf_counter() - t0, attempt + 1)
            except _Deadline:
                last = f"timed out after {budget:g}s (no complete reply in time)"
                self._not_resent(body, last, attempt)
            except openai.APITimeoutError:
                last = f"timed out after {budget:g}s (no reply)"
                self._not_resent(body, last, attempt)
            except ReplyTooLargeError:
                raise
            except openai.APIConnectionError as exc:
                cause = exc.__cause__ or exc
                if isinstance(cause, ReplyTooLargeError):
                    raise cause from None
                last = f"transport error: {type(cause).__name__}: {cause}"
            except openai.APIStatusError as exc:
                last = self._refusal(body, exc)
                last_retry_after = retry_after(exc.response.headers)
            except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError) as exc:
                last = f"malformed response body: {type(exc).__name__}: {exc}"  # a half-written body
            log.warning("chat completion attempt %d/%d failed: %s", attempt + 1, cfg.max_retries + 1, last)
        else:
            raise InfrastructureError(f"{cfg.base_url}: gave up after {cfg.max_retries + 1} attempts; last: {last}")
        raise InfrastructureError(
            f"{cfg.base_url}: gave up at the {cfg.deadline_s:g}s deadline after {attempt} attempt(s); last: {last}"
        )

    def _not_resent(self, body: dict[str, Any], last: str, attempt: int) -> None:
        """Raise ReplyTimeoutError for a delivered request that timed out (unless `resend_timed_out`)."""
        if self.config.resend_timed_out or not getattr(self._local, "sent", False):
            return
        bound = body.get("max_completion_tokens") or body.get("max_tokens")
        raise ReplyTimeoutError(
            f"{self.config.base_url}: {last} after the request was delivered (attempt {attempt + 1}): the server is"
            f" up and still generating ({'max_tokens ' + str(bound) if bound else 'no max_tokens bound'}); not"
            " resent, it would only be generated again; raise timeout_s (AGENTLOOP_TIMEOUT_S) or bound max_tokens"
        )

    def _refusal(self, body: dict[str, Any], exc: openai.APIStatusError) -> str:
        """A retryable refusal's text; raises for one that no retry can change."""
        status, text = exc.status_code, exc.response.text[:500]
        if is_context_overflow(status, exc.body, text):
            raise ContextLengthError(text)
        setting = unsupported_setting(status, exc.body, body)
        if setting:
            raise UnsupportedSettingError(setting_message(str(body.get("model")), setting, self.config.base_url, text))
        if status not in RETRY_STATUS:
            raise InfrastructureError(f"{self.config.base_url}: HTTP {status}: {text}")
        return f"HTTP {status}: {text}"

    def _attempt(self, body: dict[str, Any], deadline: float) -> Any:
        """One `create`, done by `deadline` (monotonic seconds) or cut off: a timer closes this thread's HTTP
        client, which ends a read that waits or trickles."""
        http, sdk = self._sdk()
        self._local.sent = False
        left = deadline - time.monotonic()
        options: openai.RequestOptions = {"timeout": left}
        if not self.config.api_key:
            options["headers"] = {"Authorization": openai.Omit()}
        watchdog = threading.Timer(left, http.close)
        watchdog.daemon = True
        watchdog.start()
        try:
            # The SDK's documented request call with the body as it is: `chat.completions.create` first walks every
            # message and tool schema through its typed-dict transform, about 5 ms a request with 16 tools, half
            # of the client's work per request, which bounds a run with many requests in flight.
            response = sdk.post("/chat/completions", body=body, cast_to=ChatCompletion, options=options)
        except openai.APIStatusError:
            raise
        except Exception:
            if time.monotonic() >= deadline or http.is_closed:
                raise _Deadline from None
            raise
        finally:
            watchdog.cancel()
        if time.monotonic() > deadline:
            raise _Deadline
        return response

    def _delay(self, attempt: int, retry_after_s: float | None) -> float:
        cfg = self.config
        delay = min(cfg.backoff_cap_s, cfg.backoff_s * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
        if retry_after_s is not None:
            delay = max(delay, min(retry_after_s, cfg.backoff_cap_s))
        return delay

    @staticmethod
    def _parse(response: Any, latency_s: float, attempts: int) -> Completion:
        data = response.to_dict()
        choice = data["choices"][0]
        message = choice["message"]
        if not isinstance(message, dict):
            raise TypeError("choices[0].message is not an object")
        return Completion(
            message=message,
            finish_reason=choice.get("finish_reason"),
            usage=usage_of(data.get("usage")),
            latency_s=latency_s,
            attempts=attempts,
            raw=data,
        )


def usage_of(usage: dict[str, Any] | None) -> Usage:
    """A response's `usage`, with the cached share of the prompt and the reasoning share of the completion."""
    usage = usage or {}
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    return Usage(
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cached_prompt_tokens=int(prompt_details.get("cached_tokens") or 0),
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
    )
