"""The openai client's deadlines are wall-clock: a server that trickles its reply a byte at a time (never idle
long enough for a per-read timeout) is cut off at `timeout_s`, a call's retries stop at `deadline_s`, and cutting
one thread's request off leaves another thread's request on the same client alone."""

from __future__ import annotations

import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from pipeline.endpoint.client import ChatClient, EndpointConfig
from pipeline.rollout.protocols import InfrastructureError
from tests.agents.fake_openai import completion

REPLY = json.dumps(completion("ok").body).encode()


class TrickleServer:
    """Answers by the request's `model`: "headers" trickles the status line and headers, "body" sends the
    headers and trickles the body, "slow" waits `slow_s` and then answers at once (one byte per `every_s`)."""

    def __init__(self, every_s: float = 0.2, slow_s: float = 1.5) -> None:
        self.every_s, self.slow_s = every_s, slow_s
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.requests = 0
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, rest = data.partition(b"\r\n\r\n")
            length = int(next(h.split(b":")[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-len")))
            while len(rest) < length:
                rest += conn.recv(65536)
            self.requests += 1
            model = json.loads(rest)["model"]
            headers = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(REPLY)}\r\n\r\n"
            try:
                if model == "slow":
                    time.sleep(self.slow_s)
                    conn.sendall(headers.encode() + REPLY)
                    return
                if model == "body":
                    conn.sendall(headers.encode())
                for byte in (headers.encode() if model == "headers" else b"") + REPLY:
                    if self.stop.is_set():
                        return
                    conn.sendall(bytes([byte]))
                    time.sleep(self.every_s)
            except OSError:
                pass  # the client hung up: what the deadline is for

    def __enter__(self) -> TrickleServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.sock.close()


def client(url: str, **cfg) -> ChatClient:
    return ChatClient(EndpointConfig(base_url=url, **{"max_retries": 0, "backoff_s": 0.01, **cfg}), sleep=time.sleep)


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_trickling_reply_is_cut_off_at_the_timeout(where):
    with TrickleServer() as server:
        t0 = time.monotonic()
        with pytest.raises(InfrastructureError, match=r"timed out after 2s"):
            client(server.base_url, timeout_s=2).complete({"model": where, "messages": []})
        took = time.monotonic() - t0
    assert 1.9 < took < 3.5, took  # a byte every 0.2 s: without a deadline this took ~60 s


def test_retries_stop_at_the_call_deadline():
    with TrickleServer() as server:
        t0 = time.monotonic()
        with pytest.raises(InfrastructureError, match=r"gave up at the 3s deadline after 3 attempt"):
            client(server.base_url, timeout_s=1, max_retries=20, deadline_s=3, resend_timed_out=True).complete(
                {"model": "body", "messages": []}
            )
        took = time.monotonic() - t0
    assert took < 4.5, took
    assert server.requests == 3


def test_cutting_one_request_off_leaves_other_threads_alone():
    with TrickleServer(slow_s=1.5) as server:
        shared = client(server.base_url, timeout_s=3)
        with ThreadPoolExecutor(2) as pool:
            stuck = pool.submit(shared.complete, {"model": "body", "messages": []})
            time.sleep(0.2)
            fine = pool.submit(shared.complete, {"model": "slow", "messages": []})
            with pytest.raises(InfrastructureError, match="timed out"):
                stuck.result(timeout=10)
            assert fine.result(timeout=10).message["content"] == "ok"
        # and the thread that was cut off gets a fresh pool for its next request
        assert shared.complete({"model": "slow", "messages": []}).message["content"] == "ok"
