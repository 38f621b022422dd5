"""Replies have a size bound: an endpoint that answers megabytes, declared or streamed without a length, fails
the call at once with an infrastructure error naming the bound (never retried, never stored), and a run against
such an endpoint stays small and counts the lost trials."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import write_tasks
from pipeline.endpoint.client import ChatClient, EndpointConfig, ReplyTooLargeError
from pipeline.measure import MeasureConfig, measure
from pipeline.metrics.errors import MetricsInputError
from pipeline.rollout.runner import Limits
from pipeline.world.registry import load_world
from tests.agents.fake_openai import FakeOpenAI, completion

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
CAP = 100_000


def client(url: str, **cfg) -> ChatClient:
    return ChatClient(EndpointConfig(base_url=url, max_retries=3, backoff_s=0.01, max_reply_bytes=CAP, **cfg))


def test_a_declared_flood_is_refused_without_a_retry():
    with FakeOpenAI(default=lambda body: completion("x" * 5_000_000)) as fake:
        t0 = time.monotonic()
        with pytest.raises(ReplyTooLargeError, match=r"reply of \d+ bytes, over the 100000-byte bound"):
            client(fake.base_url).complete(BODY)
        assert len(fake.requests) == 1 and time.monotonic() - t0 < 10


def test_a_reply_under_the_bound_is_accepted():
    with FakeOpenAI(default=lambda body: completion("y" * 50_000)) as fake:
        assert client(fake.base_url).complete(BODY).message["content"] == "y" * 50_000


class UndeclaredFlood:
    """Answers with no content-length (the body ends when the connection closes) and streams 20 MB."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.requests = 0
        self.sent = 0
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                self.requests += 1
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n")
                try:
                    conn.sendall(b'{"id": "x", "choices": [{"message": {"content": "')
                    for _ in range(20 * 16):
                        conn.sendall(b"z" * 65536)
                        self.sent += 65536
                except OSError:
                    pass  # the client hung up at its bound


def test_a_streamed_flood_is_cut_off_as_it_arrives():
    flood = UndeclaredFlood()
    with pytest.raises(ReplyTooLargeError, match="more than 100000 bytes"):
        client(flood.base_url).complete(BODY)
    assert flood.requests == 1
    time.sleep(0.2)
    assert flood.sent < 20 * 16 * 65536  # the client stopped reading long before the end
    flood.sock.close()


def test_a_run_against_a_flooding_endpoint_stays_small_and_reports_the_losses(tmp_path, monkeypatch):
    world = load_world("gen-5-8x10x20")
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, generate_tasks(world, 2, seed=1))
    monkeypatch.setenv("AGENTLOOP_MAX_REPLY_BYTES", str(CAP))
    monkeypatch.setenv("AGENTLOOP_MAX_RETRIES", "0")
    monkeypatch.delenv("AGENTLOOP_BASE_URL", raising=False)
    with FakeOpenAI(default=lambda body: completion("w" * 3_000_000)) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        cfg = MeasureConfig(
            world="gen-5-8x10x20", tasks=tasks, agent="openai:m", trials=2, resamples=10, limits=Limits(max_turns=4)
        )
        with pytest.raises(MetricsInputError, match="first: .*reply of 3000260 bytes, over the 100000-byte bound"):
            measure(cfg, tmp_path / "run")
    size = sum(p.stat().st_size for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert size < 100_000, size  # 4 trials of 3 MB replies: none of it stored
    verdicts = [json.loads(line)["verdict"] for line in (tmp_path / "run" / "verdicts.jsonl").read_text().splitlines()]
    assert len(verdicts) == 4 and all(v["infra_error"] for v in verdicts)
