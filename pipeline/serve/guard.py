"""What stands between a client and the only generation slot: an optional API key, a bound on the request body,
and a cheap check that a conversation cannot fit the context before its prompt is ever tokenized.

Without these, one 2 MB request held the single slot for seconds of tokenizing only to be refused, and left the
process at twice its idle memory.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_MAX_REQUEST_BYTES = 1_000_000
API_KEY_ENV = "AGENTLOOP_SERVE_API_KEY"
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def error_body(message: str, kind: str, code: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": code}}).encode()


class Guard:
    """ASGI middleware: 401 without the right bearer key (when one is set; /health stays open) and 413 for a
    body over `max_bytes`, whether it declares its length or streams it in chunks."""

    def __init__(self, app: Any, api_key: str | None = None, max_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> None:
        self.app, self.api_key, self.max_bytes = app, api_key or None, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self.api_key and scope.get("path") != "/health" and not self._authorized(headers):
            await _reply(send, 401, error_body("missing or wrong API key", "authentication_error", "invalid_api_key"))
            return
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await _reply(send, 413, self._too_large(int(declared)))
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:  # read the whole body here (at most max_bytes of it), then hand it on in one piece
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _reply(send, 413, self._too_large(size))
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body: list[bytes] | None = [b"".join(chunks)]

        async def replay() -> MutableMapping[str, Any]:
            nonlocal body
            if body is not None:
                message, body = {"type": "http.request", "body": body[0], "more_body": False}, None
                return message
            return await receive()

        await self.app(scope, replay, send)

    def _authorized(self, headers: dict[str, str]) -> bool:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        given = token.strip() if scheme.lower() == "bearer" else headers.get("x-api-key", "")
        return hmac.compare_digest(given.encode(), self.api_key.encode())  # type: ignore[union-attr]

    def _too_large(self, size: int) -> bytes:
        return error_body(
            f"request body is {size} bytes or more; this server accepts at most {self.max_bytes}",
            "invalid_request_error",
            "request_too_large",
        )


async def _reply(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def max_token_bytes(tokenizer: Any) -> int:
    """The most UTF-8 bytes any vocabulary entry spells (an upper bound on the bytes one token covers: byte-level
    and sentencepiece markers only make an entry longer than the text it stands for)."""
    return max((len(t.encode("utf-8")) for t in tokenizer.get_vocab()), default=1) or 1


def fewest_prompt_tokens(messages: list[dict[str, Any]], token_bytes: int) -> int:
    """A lower bound on a prompt's token count: user text is rendered verbatim by every template, and no token
    covers more than `token_bytes` bytes of it."""
    size = 0
    for m in messages:
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text") or "" for p in content if isinstance(p, dict))
        size += len((content or "").encode("utf-8"))
    return -(-size // max(1, token_bytes))


def check_exposure(host: str, api_key: str | None) -> None:
    """A warning when the API is reachable beyond this machine with no key."""
    if not api_key and host not in LOOPBACK:
        log.warning("serving on %s without an API key: anyone who can reach it can use it (set --api-key)", host)
