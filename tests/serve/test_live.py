"""A served model replaced while it serves: requests in flight finish on the version they began on (none fails),
later ones get the new version; the watcher swaps only a version that loaded, and keeps serving through a
registry that does not answer."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from pipeline.errors import InputError
from pipeline.rollout import Message
from pipeline.serve import AliasWatcher, LiveEngine, create_app
from pipeline.serve.engine import Generation
from tests.server_process import serve_in_thread

REQUEST = {"model": "agent", "messages": [{"role": "user", "content": "hi"}]}


class GatedEngine:
    """Answers with its own label, after `gate` opens (so a test holds requests in flight)."""

    def __init__(self, label: str, context: int = 4096) -> None:
        self.label, self.name, self.context = label, label, context
        self.gate = threading.Event()
        self.started = threading.Semaphore(0)
        self.gate.set()

    def generate(self, messages, tools, policy, params) -> Generation:
        self.started.release()
        assert self.gate.wait(30)
        return Generation(Message(role="assistant", content=f"from {self.label}"), 3, 2, "stop")


def test_requests_in_flight_finish_on_the_old_version_and_later_ones_get_the_new():
    old, new = GatedEngine("old"), GatedEngine("new")
    old.gate.clear()
    live = LiveEngine("agent", old, "1", "agentloop-agent/1")
    app = create_app(live, max_concurrency=8)
    with serve_in_thread(app) as url, ThreadPoolExecutor(8) as pool:
        post = lambda: httpx.post(f"{url}/v1/chat/completions", json=REQUEST, timeout=30)  # noqa: E731
        in_flight = [pool.submit(post) for _ in range(4)]
        for _ in range(4):
            assert old.started.acquire(timeout=10)  # all four are generating on the old engine
        watcher = AliasWatcher(live, resolve=lambda: "2", load=lambda v: (new, f"agentloop-agent/{v}"), interval_s=1)
        assert watcher.poll() is True and live.version == "2"
        after = [pool.submit(post) for _ in range(4)]
        later = [f.result(timeout=30) for f in after]  # served while the old ones still wait
        old.gate.set()
        earlier = [f.result(timeout=30) for f in in_flight]
        models = httpx.get(f"{url}/v1/models").json()["data"][0]
    assert all(r.status_code == 200 for r in earlier + later)
    assert {(r.json()["model"], r.json()["choices"][0]["message"]["content"]) for r in earlier} == {
        ("agentloop-agent/1", "from old")
    }
    assert {(r.json()["model"], r.json()["choices"][0]["message"]["content"]) for r in later} == {
        ("agentloop-agent/2", "from new")
    }
    assert models == {
        "id": "agent",
        "object": "model",
        "owned_by": "agentloop",
        "max_model_len": 4096,
        "version": "2",
        "root": "agentloop-agent/2",
    }


def test_the_live_version_name_is_accepted_and_a_plain_engine_card_is_unchanged():
    from fastapi.testclient import TestClient

    live = TestClient(create_app(LiveEngine("agent", GatedEngine("e"), "3")))
    reply = live.post("/v1/chat/completions", json={**REQUEST, "model": "agent/3"})
    assert reply.status_code == 200 and reply.json()["model"] == "agent/3"
    assert live.post("/v1/chat/completions", json={**REQUEST, "model": "agent/2"}).status_code == 404
    plain = TestClient(create_app(GatedEngine("fixed"))).get("/v1/models").json()["data"][0]
    assert set(plain) == {"id", "object", "owned_by", "max_model_len"}


def test_the_watcher_swaps_only_a_version_that_loaded_and_rides_out_a_silent_registry():
    live = LiveEngine("agent", GatedEngine("v1"), "1")
    answers: list[object] = ["1", ConnectionError("registry down"), "2", "2", "3"]
    loads: list[str] = []

    def resolve() -> str | None:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]

    def load(version: str):
        loads.append(version)
        if version == "2":
            raise InputError("version 2: no checkpoint")
        return GatedEngine(f"v{version}"), f"agent/{version}"

    watcher = AliasWatcher(live, resolve, load, interval_s=1)
    assert [watcher.poll() for _ in range(5)] == [False, False, False, False, True]
    assert loads == ["2", "2", "3"] and live.version == "3" and live.swaps == 1
    with pytest.raises(InputError, match="poll interval"):
        AliasWatcher(live, resolve, load, interval_s=0)


def test_the_watcher_thread_follows_the_alias():
    live = LiveEngine("agent", GatedEngine("v1"), "1")
    current = {"version": "1"}
    swapped = threading.Event()
    watcher = AliasWatcher(
        live,
        resolve=lambda: current["version"],
        load=lambda v: (GatedEngine(f"v{v}"), f"agent/{v}"),
        interval_s=0.02,
        on_swap=lambda old, new: swapped.set(),
    ).start()
    try:
        current["version"] = "2"
        assert swapped.wait(10) and live.live_model == "agent/2"
    finally:
        watcher.stop()


def test_a_registered_model_is_named_by_alias_or_version():
    from pipeline.cli.serve import parse_registered

    assert parse_registered("models:/agentloop-agent@production") == ("agentloop-agent", "production", None)
    assert parse_registered("models:/agentloop-agent/3") == ("agentloop-agent", None, "3")
    for bad in ("models:/agentloop-agent", "models:/a@b/3", "models:/a/0", "models:/@prod"):
        with pytest.raises(InputError, match="expected models:/NAME@ALIAS or models:/NAME/VERSION"):
            parse_registered(bad)


def test_serving_an_alias_that_cannot_be_served_is_one_line(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from pipeline.cli import app

    runner = CliRunner()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:1")
    out = runner.invoke(app, ["serve", "--model", "models:/agentloop-agent@production"])
    assert out.exit_code == 2 and "error: MLflow at http://127.0.0.1:1 is not reachable" in out.output
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlruns.db'}")
    out = runner.invoke(app, ["serve", "--model", "models:/agentloop-agent@production"])
    assert out.exit_code == 2 and "agentloop-agent has no alias production in sqlite:///" in out.output
    out = runner.invoke(app, ["serve", "--model", "models:/agentloop-agent"])
    assert out.exit_code == 2 and "expected models:/NAME@ALIAS" in out.output
