"""Bounds on the connections `agentloop serve` holds: a read timeout and a connection limit.

uvicorn bounds neither a request that arrives slowly (a client sending its headers or body a byte at a time
holds its connection as long as it likes) nor how many connections are open; 300 such clients held the server
for 40 s each. The HTTP protocol here is uvicorn's h11 protocol with two additions:

- read timeout: from a connection's first byte (or a keep-alive connection's next request) to the request's
  last byte at most `read_timeout_s`; a request still incomplete then is answered 408 and its connection closed.
  Generating the reply is not counted (that is bounded by `max_tokens` and the context).
- connection limit: while more than `max_connections` connections are open, a request is answered 503 (with
  `Connection: close`) at once instead of queueing; clients retry 503 with back-off.

Both answers carry the JSON error body of every other refusal.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from pipeline.serve.guard import error_body

DEFAULT_READ_TIMEOUT_S = 10.0
DEFAULT_MAX_CONNECTIONS = 128
_READING = (h11.IDLE, h11.SEND_BODY)


def _raw_response(status: int, reason: str, body: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def _over_limit_app(limit: int) -> Any:
    body = error_body(
        f"the server is at its limit of {limit} open connections; retry later", "server_error", "too_many_connections"
    )

    async def app(scope: Any, receive: Any, send: Any) -> None:
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
            (b"retry-after", b"1"),
        ]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def bounded_protocol(read_timeout_s: float = DEFAULT_READ_TIMEOUT_S, max_connections: int = DEFAULT_MAX_CONNECTIONS):
    """uvicorn's h11 protocol class with the two bounds (pass it as `uvicorn.Config(http=...)`)."""
    if read_timeout_s <= 0 or max_connections < 1:
        raise ValueError("read_timeout_s must be > 0 and max_connections >= 1")
    refuse = _over_limit_app(max_connections)
    timeout_reply = _raw_response(
        408,
        "Request Timeout",
        error_body(
            f"the request was not received in full within {read_timeout_s:g}s", "invalid_request_error", "timeout"
        ),
    )

    class BoundedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.limit_concurrency = None  # ours answers in JSON, counted in connections
            self._app = self.app
            self._read_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state in _READING:
                self._arm()
            super().data_received(data)
            if self.conn.their_state not in _READING:
                self._disarm()  # the whole request is in (or the connection is done)

        def handle_events(self) -> None:
            self.app = refuse if len(self.connections) > max_connections else self._app
            super().handle_events()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._read_timer is None:
                self._read_timer = self.loop.call_later(read_timeout_s, self._timed_out)

        def _disarm(self) -> None:
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None

        def _timed_out(self) -> None:
            self._read_timer = None
            if self.transport.is_closing():
                return
            if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):  # no reply begun: say why it ends
                self.transport.write(timeout_reply)
            self.transport.close()

    return BoundedH11Protocol
