"""`agentloop serve --model models:/NAME@ALIAS` for real: two tiny random-weight checkpoints registered in a sqlite
store, the server following `production` while clients keep requests in flight; `agentloop model deploy` moves
the alias, `rollback` moves it back: no request fails, and requests after each move get the version it names."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from pipeline.tracking import IterationTracker, TrackingConfig, deploy, register_checkpoint, rollback
from tests.server_process import free_port, wait_until_up
from tests.train.helpers import TINY, tiny_checkpoint

pytestmark = pytest.mark.slow
REQUEST = {"model": "agentloop-agent", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}


@pytest.fixture
def tracking(tmp_path, monkeypatch) -> TrackingConfig:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    (tmp_path / "store").mkdir()
    return TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'store' / 'mlruns.db'}")


def _register(config: TrackingConfig, path) -> str:
    with IterationTracker(config, iteration=1, agent=f"hf:{path}", commit="c") as it, it.stage("train"):
        return register_checkpoint(it, path)


def _live_version(url: str) -> str:
    return httpx.get(f"{url}/v1/models", timeout=10).json()["data"][0]["version"]


def _wait_for(url: str, version: str, seconds: float = 60) -> None:
    deadline = time.time() + seconds
    while _live_version(url) != version:
        assert time.time() < deadline, f"the server did not move to version {version} in {seconds:g} s"
        time.sleep(0.1)


def test_serve_follows_the_alias_without_dropping_requests(tracking, tmp_path):
    v1 = _register(tracking, tiny_checkpoint(tmp_path / "one"))
    wider = TINY.model_copy(update={"intermediate_size": 2 * TINY.intermediate_size})  # other weights, other digest
    v2 = _register(tracking, tiny_checkpoint(tmp_path / "two", wider))
    assert v1 != v2
    deploy(version=v1, config=tracking)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracking.tracking_uri}
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli", "serve", "--model", "models:/agentloop-agent@production"]
            + ["--port", str(port), "--poll-interval", "0.2", "--max-concurrency", "4"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp_path,
        )
    replies: list[tuple[float, float, int, str]] = []  # (sent, answered, status, model)
    stop = threading.Event()

    def client() -> None:
        with httpx.Client(timeout=60) as http:
            while not stop.is_set():
                sent = time.time()
                r = http.post(f"{url}/v1/chat/completions", json=REQUEST)
                replies.append((sent, time.time(), r.status_code, r.json().get("model", r.text)))

    try:
        wait_until_up(proc, f"{url}/health", 120, "agentloop serve", log=log)
        assert _live_version(url) == v1
        with ThreadPoolExecutor(4) as pool:
            for _ in range(4):
                pool.submit(client)
            time.sleep(1)
            deploy(version=v2, config=tracking)
            _wait_for(url, v2)
            moved = time.time()
            time.sleep(1)
            rolling = time.time()
            rollback(config=tracking)
            _wait_for(url, v1)
            back = time.time()
            time.sleep(1)
            stop.set()
    finally:
        stop.set()
        proc.terminate()
        proc.wait(timeout=30)
    assert replies and all(status == 200 for *_, status, _ in replies), [r for r in replies if r[2] != 200][:3]
    models = [m for *_, m in replies]
    assert f"agentloop-agent/{v2}" in models and f"agentloop-agent/{v1}" in models
    # a request sent after the server reported a version, and answered before the next move began, was answered
    # by that version
    assert {m for sent, done, _, m in replies if sent > moved and done < rolling} == {f"agentloop-agent/{v2}"}
    assert {m for sent, _, _, m in replies if sent > back} == {f"agentloop-agent/{v1}"}
    assert "following production" in log.read_text()
