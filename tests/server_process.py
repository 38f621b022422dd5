"""A server to test against: a subprocess waited for until it answers (or named when it exits or never does), or an
ASGI app run by uvicorn in a thread of the test process."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest


def wait_until_up(proc: subprocess.Popen, url: str, seconds: float, what: str, log: Path | None = None) -> None:
    """Poll `url` until it answers 200; fail the test naming `what` (and the output so far) when the process
    exits first or `seconds` pass."""

    def output() -> str:
        if log is not None:
            return log.read_text(errors="replace")[-2000:]
        return proc.stdout.read().decode(errors="replace")[-2000:] if proc.stdout else ""

    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited: {output()}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    pytest.fail(f"{what} did not come up in {seconds:g} s: {output()}")


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_in_thread(app, seconds: float = 20) -> Iterator[str]:
    """An ASGI app behind a real uvicorn server on 127.0.0.1 (a free port), in a background thread, with its
    lifespan run; yields its base URL, stops it after."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + seconds
    while not server.started:
        if not thread.is_alive() or time.time() > deadline:
            pytest.fail(f"uvicorn did not start in {seconds:g} s")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(20)
