"""One client for every OpenAI-compatible chat-completions endpoint: the agent, the LLM user and the LLM judge.

Transient failures (timeouts, connection errors, 5xx, 429) are retried with capped exponential backoff and
jitter; when the retries run out, or the endpoint refuses the request for good (401, 404, ...), the call
raises `InfrastructureError`, so the trial is retried or left out, never scored as the agent's failure.

Both bounds are wall-clock deadlines, not httpx's per-read timeouts: `timeout_s` holds for one attempt as a
whole (connecting, sending and every byte of the reply), so a server that trickles a byte a second cannot hold a
call open, and `deadline_s` holds for the call with all its retries and back-off. Each thread has its own
connection pool, so the deadline can cut one stuck request off (by closing that pool) without touching the
requests of other threads.

This stays a small hand-written client over httpx rather than the `openai` SDK: the SDK's timeouts are the same
per-read httpx timeouts (a trickling server defeats them too), and its retry policy would replace ours (capped
Retry-After, context-length detection, `InfrastructureError`) rather than add a deadline.

Endpoint settings come from the environment: `AGENTLOOP_BASE_URL` / `AGENTLOOP_API_KEY` first, then the usual
`OPENAI_BASE_URL` / `OPENAI_API_KEY`; `AGENTLOOP_TIMEOUT_S`, `AGENTLOOP_DEADLINE_S`, `AGENTLOOP_MAX_RETRIES`,
`AGENTLOOP_BACKOFF_S` tune the retries.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from pipeline.rollout.protocols import InfrastructureError
from pipeline.rollout.trajectory import Usage

log = logging.getLogger(__name__)
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"


class ContextLengthError(RuntimeError):
    """The endpoint refused the prompt as longer than the model's context: the conversation, not the endpoint."""


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


class _Deadline(Exception):
    """The attempt ran out of time (raised in the calling thread, whatever the watchdog interrupted)."""


class ChatClient:
    """Thread-safe synchronous client; picklable (the HTTP connection pools are rebuilt after unpickling)."""

    def __init__(self, config: EndpointConfig | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config or EndpointConfig.from_env()
        self.sleep = sleep
        self._local = threading.local()
        self._pools: list[httpx.Client] = []
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config, "sleep": self.sleep}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"], state["sleep"])

    @property
    def http(self) -> httpx.Client:
        """This thread's connection pool (a new one after a deadline closed the last)."""
        pool = getattr(self._local, "http", None)
        if pool is None or pool.is_closed:
            headers = {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}
            pool = httpx.Client(
                base_url=self.config.base_url.rstrip("/") + "/", headers=headers, timeout=self.config.timeout_s
            )
            self._local.http = pool
            with self._lock:
                self._pools = [p for p in self._pools if not p.is_closed] + [pool]
        return pool

    def close(self) -> None:
        with self._lock:
            pools, self._pools = self._pools, []
        for pool in pools:
            pool.close()

    def complete(self, body: dict[str, Any]) -> Completion:
        """POST chat/completions with retries; the request `body` is sent as given (model, messages, tools...)."""
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
                status, content, headers = self._post(body, now + budget)
            except _Deadline:
                last = f"timed out after {budget:g}s (no complete reply in time)"
            except httpx.TimeoutException as exc:
                last = f"timed out after {budget:g}s ({type(exc).__name__})"
            except httpx.TransportError as exc:
                last = f"transport error: {type(exc).__name__}: {exc}"
            else:
                if status == 200:
                    try:
                        return self._parse(json.loads(content), time.perf_counter() - t0, attempt + 1)
                    except (ValueError, KeyError, IndexError, TypeError, RecursionError) as exc:
                        last = f"malformed response body: {exc}"  # a half-written body from a dying server
                else:
                    text = content[:500].decode("utf-8", "replace")
                    if status == 400 and "context" in text.lower() and "length" in text.lower():
                        raise ContextLengthError(text)
                    if status not in RETRY_STATUS:
                        raise InfrastructureError(f"{cfg.base_url}: HTTP {status}: {text}")
                    last = f"HTTP {status}: {text}"
                    last_retry_after = _retry_after(headers)
            log.warning("chat completion attempt %d/%d failed: %s", attempt + 1, cfg.max_retries + 1, last)
        else:
            raise InfrastructureError(f"{cfg.base_url}: gave up after {cfg.max_retries + 1} attempts; last: {last}")
        raise InfrastructureError(
            f"{cfg.base_url}: gave up at the {cfg.deadline_s:g}s deadline after {attempt} attempt(s); last: {last}"
        )

    def _post(self, body: dict[str, Any], deadline: float) -> tuple[int, bytes, httpx.Headers]:
        """One attempt, done by `deadline` (monotonic seconds) or cut off: a watchdog closes this thread's pool,
        which ends a read that waits or trickles, and the body is read chunk by chunk against the clock."""
        http = self.http
        left = deadline - time.monotonic()
        watchdog = threading.Timer(left, http.close)
        watchdog.daemon = True
        watchdog.start()
        try:
            with http.stream("POST", "chat/completions", json=body, timeout=httpx.Timeout(left)) as response:
                chunks = []
                for chunk in response.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise _Deadline
                return response.status_code, b"".join(chunks), response.headers
        except Exception as exc:
            if isinstance(exc, _Deadline) or time.monotonic() >= deadline or http.is_closed:
                raise _Deadline from None
            raise
        finally:
            watchdog.cancel()

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        cfg = self.config
        delay = min(cfg.backoff_cap_s, cfg.backoff_s * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
        if retry_after is not None:
            delay = max(delay, min(retry_after, cfg.backoff_cap_s))
        return delay

    @staticmethod
    def _parse(data: dict[str, Any], latency_s: float, attempts: int) -> Completion:
        choice = data["choices"][0]
        message = choice["message"]
        if not isinstance(message, dict):
            raise TypeError("choices[0].message is not an object")
        usage = data.get("usage") or {}
        return Completion(
            message=message,
            finish_reason=choice.get("finish_reason"),
            usage=Usage(
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
            ),
            latency_s=latency_s,
            attempts=attempts,
            raw=data,
        )


def _retry_after(headers: httpx.Headers) -> float | None:
    try:
        return float(headers["retry-after"])
    except (KeyError, ValueError):
        return None
