"""Slow and numerous clients at a real uvicorn server with `agentloop serve`'s protocol: a request that arrives
too slowly is answered 408 and closed at the read timeout, a connection over the limit is answered 503 at once,
and the server serves normally as soon as they are gone."""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx
import pytest
import uvicorn

from pipeline.serve import create_app
from pipeline.serve.connections import bounded_protocol
from tests.serve.test_guard import CountingEngine

READ_TIMEOUT = 2.0  # long enough that a refusal on a loaded machine still comes well before it
LIMIT = 8
BODY = b'{"model": "fake", "messages": [{"role": "user", "content": "hi"}]}'


@pytest.fixture
def url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(
        create_app(CountingEngine()),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        http=bounded_protocol(READ_TIMEOUT, LIMIT),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def slow_client(url: str, head: bytes) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.sendall(head)
    return sock


def read_all(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except (TimeoutError, ConnectionResetError):
        pass
    return b"".join(chunks)


def post(url: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/chat/completions", content=BODY, headers={"content-type": "application/json"})


def test_headers_sent_too_slowly_are_cut_off_at_the_read_timeout(url):
    sock = slow_client(url, b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n")  # headers never finished
    t0 = time.monotonic()
    reply = read_all(sock, 10)
    assert reply.startswith(b"HTTP/1.1 408") and f"within {READ_TIMEOUT:g}s".encode() in reply
    assert READ_TIMEOUT * 0.9 <= time.monotonic() - t0 < READ_TIMEOUT + 3
    assert post(url).status_code == 200


def test_a_body_sent_too_slowly_is_cut_off(url):
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        f"content-length: {len(BODY)}\r\n\r\n"
    )
    sock = slow_client(url, head.encode() + BODY[:10])
    t0 = time.monotonic()
    reply = read_all(sock, 10)
    assert reply.startswith(b"HTTP/1.1 408") and time.monotonic() - t0 < READ_TIMEOUT + 3


def test_a_keep_alive_connection_still_serves_several_requests(url):
    with httpx.Client() as http:
        for _ in range(3):
            assert http.post(f"{url}/v1/chat/completions", json=json.loads(BODY)).status_code == 200
            time.sleep(READ_TIMEOUT * 0.6)  # idle between requests is the keep-alive's business, not a slow read


def test_connections_over_the_limit_are_refused_at_once_then_served_again(url):
    held = [slow_client(url, b"POST /v1/chat/completions HTTP/1.1\r\n") for _ in range(3 * LIMIT)]
    time.sleep(0.2)
    t0 = time.monotonic()
    r = post(url)
    assert r.status_code == 503 and r.json()["error"]["code"] == "too_many_connections"
    assert time.monotonic() - t0 < READ_TIMEOUT  # refused, not queued behind the slow clients
    replies = [read_all(s, 10) for s in held]
    assert all(reply.startswith(b"HTTP/1.1 408") for reply in replies)
    for s in held:
        s.close()
    time.sleep(0.2)
    assert post(url).status_code == 200
