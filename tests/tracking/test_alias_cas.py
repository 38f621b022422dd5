"""Compare-and-set alias moves: two promotions racing on one registry (threads on a sqlite store, processes on a
PostgreSQL-backed lock): exactly one moves `champion`, the other is told it was overtaken, no version is lost."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from pipeline.tracking import (
    UNCHECKED,
    IterationTracker,
    PromotionOvertaken,
    TrackingConfig,
    champion_version,
    promote,
    register_checkpoint,
    registry_lock,
)
from pipeline.tracking.aliaslock import LOCK_URL_ENV, TrackingUnavailableError, advisory_key, lock_kind

PASS = {"promote": True, "interval": [0.04, 0.3], "reasons": ["lower bound 0.04 > margin 0.0"]}


def _checkpoint(root: Path, tag: str) -> Path:
    d = root / f"ckpt-{tag}"
    d.mkdir(parents=True)
    (d / "model.safetensors").write_bytes(f"weights {tag}".encode() * 50)
    (d / "config.json").write_text(f'{{"iteration": "{tag}"}}')
    return d


def _register(config, n: int, ckpt: Path) -> str:
    with IterationTracker(config, iteration=n, agent=f"hf:{ckpt}", commit=f"c{n}") as it, it.stage("train"):
        return register_checkpoint(it, ckpt)


@pytest.fixture
def slow_reads(monkeypatch):
    """A wide window between reading an alias and moving it: without the lock both racers would move it."""
    from mlflow import MlflowClient

    read = MlflowClient.get_model_version_by_alias

    def slow(self, *args, **kwargs):
        got = read(self, *args, **kwargs)
        time.sleep(0.3)
        return got

    monkeypatch.setattr(MlflowClient, "get_model_version_by_alias", slow)


def _race(config, versions: list[str], gated_against: str | None) -> dict[str, object]:
    """Each version promoted from its own thread, all released at once; what each got (None: it moved)."""
    barrier = threading.Barrier(len(versions))
    got: dict[str, object] = {}

    def one(v: str) -> None:
        barrier.wait()
        try:
            promote(v, PASS, config=config, gated_against=gated_against)
            got[v] = None
        except PromotionOvertaken as exc:
            got[v] = exc

    threads = [threading.Thread(target=one, args=(v,)) for v in versions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return got


def test_two_promotions_gated_against_one_champion_exactly_one_moves(tracking, tmp_path, slow_reads):
    client = tracking.client()
    v1 = _register(tracking, 1, _checkpoint(tmp_path, "1"))
    promote(v1, PASS, config=tracking)
    v2, v3 = _register(tracking, 2, _checkpoint(tmp_path, "2")), _register(tracking, 2, _checkpoint(tmp_path, "3"))
    got = _race(tracking, [v2, v3], gated_against=v1)

    moved = [v for v, exc in got.items() if exc is None]
    overtaken = [exc for exc in got.values() if isinstance(exc, PromotionOvertaken)]
    assert len(moved) == 1 and len(overtaken) == 1, got
    winner, loser = moved[0], ({v2, v3} - set(moved)).pop()
    assert champion_version(tracking) == winner
    assert overtaken[0].current == winner
    message = str(overtaken[0])
    assert f"it is version {winner}" in message and f"gated against version {v1}" in message
    assert f"version {loser} is registered but not promoted" in message and "\n" not in message
    # no version lost, nothing half-recorded: every version is there; only the winner records a promotion
    versions = {str(mv.version): mv for mv in client.search_model_versions("name = 'agentloop-agent'")}
    assert set(versions) == {v1, v2, v3}
    assert versions[winner].tags["agentloop.promoted_over"] == v1
    assert "agentloop.promoted_over" not in versions[loser].tags


def test_first_promotions_racing_with_no_champion_one_moves(tracking, tmp_path, slow_reads):
    v1, v2 = _register(tracking, 1, _checkpoint(tmp_path, "a")), _register(tracking, 1, _checkpoint(tmp_path, "b"))
    got = _race(tracking, [v1, v2], gated_against=None)
    assert sorted(exc is None for exc in got.values()) == [False, True]
    assert champion_version(tracking) in (v1, v2)
    loser = next(exc for exc in got.values() if exc is not None)
    assert "gated against no champion" in str(loser)


def test_a_promotion_not_gated_against_the_champion_and_a_rerun_move_as_before(tracking, tmp_path):
    v1, v2 = _register(tracking, 1, _checkpoint(tmp_path, "1")), _register(tracking, 2, _checkpoint(tmp_path, "2"))
    promote(v1, PASS, config=tracking)
    promote(v2, PASS, config=tracking, gated_against=UNCHECKED)  # e.g. a baseline that was not the champion
    assert champion_version(tracking) == v2
    promote(v2, PASS, config=tracking, gated_against=v1)  # a rerun after its own move landed: nothing to do
    assert champion_version(tracking) == v2


def test_the_lock_serialises_movers_and_is_released(tracking):
    order: list[str] = []

    def hold(tag: str, seconds: float) -> None:
        with registry_lock(tracking.tracking_uri, tracking.model_name):
            order.append(f"{tag}+")
            time.sleep(seconds)
            order.append(f"{tag}-")

    first = threading.Thread(target=hold, args=("a", 0.3))
    first.start()
    time.sleep(0.1)
    hold("b", 0)
    first.join()
    assert order == ["a+", "a-", "b+", "b-"]
    db = Path(tracking.tracking_uri.removeprefix("sqlite:///"))
    assert (db.parent / f"{db.name}.lock").exists()


def test_a_lock_not_granted_in_time_is_one_line(tracking):
    with registry_lock(tracking.tracking_uri, tracking.model_name):
        done = {}

        def other() -> None:
            try:
                with registry_lock(tracking.tracking_uri, tracking.model_name, timeout_s=0.2):
                    done["got"] = True
            except TrackingUnavailableError as exc:
                done["error"] = str(exc)

        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert "not granted within 0.2 s" in done["error"]


def test_which_lock_guards_which_store(monkeypatch, tmp_path):
    monkeypatch.delenv(LOCK_URL_ENV, raising=False)
    assert lock_kind(f"sqlite:///{tmp_path}/m.db") == ("file", f"{tmp_path}/m.db.lock")
    assert lock_kind(str(tmp_path / "mlruns")) == ("file", f"{tmp_path}/mlruns/.agentloop-registry.lock")
    assert lock_kind("postgresql+psycopg://u@h:5/mlflow") == ("postgres", "postgresql://u@h:5/mlflow")
    assert lock_kind("http://127.0.0.1:5000") == ("none", None)
    monkeypatch.setenv(LOCK_URL_ENV, "postgresql://u@h:5/mlflow")
    assert lock_kind("http://127.0.0.1:5000") == ("postgres", "postgresql://u@h:5/mlflow")
    monkeypatch.setenv(LOCK_URL_ENV, "mysql://u@h/x")
    with pytest.raises(TrackingUnavailableError, match=LOCK_URL_ENV):
        lock_kind("http://127.0.0.1:5000")
    assert advisory_key("agentloop-agent") == advisory_key("agentloop-agent") != advisory_key("other")


def test_an_unreachable_lock_database_is_one_line(monkeypatch):
    monkeypatch.setenv(LOCK_URL_ENV, "postgresql://nobody@127.0.0.1:1/mlflow")
    unreachable = "registry lock: PostgreSQL at 127.0.0.1 is not reachable"
    with (
        pytest.raises(TrackingUnavailableError, match=unreachable),
        registry_lock("http://127.0.0.1:1", "agentloop-agent", timeout_s=2),
    ):
        pass


def test_the_advisory_lock_serialises_processes_sessions(postgres_url, monkeypatch):
    """Two sessions on a real PostgreSQL: the second waits until the first lets go (or ends)."""
    import psycopg

    monkeypatch.setenv(LOCK_URL_ENV, postgres_url)
    key = advisory_key("agentloop-agent")
    with registry_lock("http://127.0.0.1:1", "agentloop-agent"):
        with psycopg.connect(postgres_url, autocommit=True) as other:
            assert other.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0] is False
        with (
            pytest.raises(TrackingUnavailableError, match="not granted within 0.3 s"),
            registry_lock("http://127.0.0.1:1", "agentloop-agent", timeout_s=0.3),
        ):
            pass
    with psycopg.connect(postgres_url, autocommit=True) as other:
        assert other.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0] is True


RACER = """
import sys, time
from mlflow import MlflowClient
from pipeline.tracking import PromotionOvertaken, TrackingConfig, promote
read = MlflowClient.get_model_version_by_alias
def slow_read(self, *args, **kwargs):  # a wide window between reading the alias and moving it
    got = read(self, *args, **kwargs)
    time.sleep(1)
    return got
MlflowClient.get_model_version_by_alias = slow_read
config = TrackingConfig(tracking_uri=sys.argv[1])
version, against, start = sys.argv[2], sys.argv[3], float(sys.argv[4])
time.sleep(max(0.0, start - time.time()))
try:
    promote(version, {"promote": True, "interval": [0.1, 0.2], "reasons": ["pass"]}, config=config,
            gated_against=against)
    print("moved")
except PromotionOvertaken as exc:
    print("overtaken:", exc)
"""


def _race_processes(config: TrackingConfig, versions: list[str], against: str, lock_url: str) -> dict[str, str]:
    """Each version promoted by its own process at the same instant; what each printed last."""
    import os
    import subprocess
    import sys

    env = {**os.environ, LOCK_URL_ENV: lock_url}
    start = time.time() + 8  # both processes imported and waiting by then
    procs = {
        v: subprocess.Popen(
            [sys.executable, "-c", RACER, config.tracking_uri, v, against, str(start)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for v in versions
    }
    outs = {v: p.communicate(timeout=180) for v, p in procs.items()}
    return {v: (out.strip().splitlines() or [err.strip()[-500:]])[-1] for v, (out, err) in outs.items()}


def _one_moved(config: TrackingConfig, said: dict[str, str]) -> None:
    assert sorted(line.split(":")[0] for line in said.values()) == ["moved", "overtaken"], said
    winner = next(v for v, line in said.items() if line == "moved")
    assert champion_version(config) == winner
    versions = {str(mv.version): mv.tags for mv in config.client().search_model_versions("name = 'agentloop-agent'")}
    assert len(versions) == 3 and sum("agentloop.promoted_over" in tags for tags in versions.values()) == 2


@pytest.mark.slow
def test_two_processes_racing_under_the_advisory_lock(tracking, tmp_path, postgres_url):
    """Two processes, each promoting its own version at the same instant, the lock a PostgreSQL advisory lock."""
    v1 = _register(tracking, 1, _checkpoint(tmp_path, "1"))
    promote(v1, PASS, config=tracking)
    v2, v3 = _register(tracking, 2, _checkpoint(tmp_path, "2")), _register(tracking, 2, _checkpoint(tmp_path, "3"))
    _one_moved(tracking, _race_processes(tracking, [v2, v3], v1, postgres_url))


@pytest.mark.slow
def test_two_processes_racing_through_a_tracking_server(tmp_path, mlflow_template, postgres_url, monkeypatch):
    """The team's shape: clients of an `mlflow server` (artifacts served by it), the lock in PostgreSQL."""
    from tests.tracking.server import serve_mlflow

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with serve_mlflow(tmp_path / "server", mlflow_template) as url:
        config = TrackingConfig(tracking_uri=url)
        monkeypatch.setenv(LOCK_URL_ENV, postgres_url)
        v1 = _register(config, 1, _checkpoint(tmp_path, "1"))
        promote(v1, PASS, config=config)
        v2, v3 = _register(config, 2, _checkpoint(tmp_path, "2")), _register(config, 2, _checkpoint(tmp_path, "3"))
        _one_moved(config, _race_processes(config, [v2, v3], v1, postgres_url))
