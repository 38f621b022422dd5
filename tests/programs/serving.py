"""A Starlette app served for real by uvicorn on 127.0.0.1 (a free port, a daemon thread), for the tests."""

from __future__ import annotations

import threading
import time

import uvicorn
from starlette.types import ASGIApp

from tests.programs.scripted_model import free_port


class Served:
    """`with Served(app) as served:` serves `app` at `served.url` (`http://127.0.0.1:PORT`) until the block ends."""

    def __init__(self, app: ASGIApp, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started and time.time() < deadline:
            time.sleep(0.02)
        assert self.server.started, "uvicorn did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
