"""Compare-and-set for registry aliases: MLflow has none, so every alias move happens under one lock per
registered model, and the mover re-reads the alias inside it.

Which lock, by the store (`registry_lock`):

- a PostgreSQL-backed store: a PostgreSQL advisory lock (`pg_advisory_lock`, a session lock keyed by the model's
  name) in the store's own database. Its URL comes from AGENTLOOP_REGISTRY_LOCK_URL (the team stack exports the
  MLflow database's URL there: the tracking server itself has no lock to lend), or from the tracking URI when
  it is a `postgresql://` URI. PostgreSQL drops the lock with the session, so a killed mover never leaves it
  held.
- a sqlite store (`sqlite:///PATH`): an exclusive `flock` on `PATH.lock` beside the database (the kernel drops
  it with the process).
- a file store (a path or `file:` URI): an `flock` on `.agentloop-registry.lock` inside it.
- an `http(s)` server without AGENTLOOP_REGISTRY_LOCK_URL: no lock the clients share exists; the move still
  re-reads the alias first (a narrow window instead of none) and says so once in the log.

Waiting for the lock is bounded (AGENTLOOP_REGISTRY_LOCK_TIMEOUT seconds, default 120); a database that cannot
be reached or a lock not granted in time is one TrackingUnavailableError.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from pipeline.tracking.bounds import TrackingUnavailableError

log = logging.getLogger(__name__)

LOCK_URL_ENV = "AGENTLOOP_REGISTRY_LOCK_URL"
LOCK_TIMEOUT_ENV = "AGENTLOOP_REGISTRY_LOCK_TIMEOUT"
DEFAULT_TIMEOUT_S = 120.0
FILE_LOCK_NAME = ".agentloop-registry.lock"
_POLL_S = 0.05
_warned: set[str] = set()


def lock_timeout() -> float:
    raw = os.environ.get(LOCK_TIMEOUT_ENV)
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        raise TrackingUnavailableError(f"{LOCK_TIMEOUT_ENV}={raw!r}: expected seconds (a number)") from None
    if value <= 0:
        raise TrackingUnavailableError(f"{LOCK_TIMEOUT_ENV}={raw!r}: expected seconds > 0")
    return value


def advisory_key(model_name: str) -> int:
    """The advisory lock's key: a signed 64-bit number from the model's name (the same in every process)."""
    return int.from_bytes(hashlib.sha256(f"agentloop-registry:{model_name}".encode()).digest()[:8], "big", signed=True)


def _postgres_url(url: str) -> str:
    """A libpq URL from an SQLAlchemy one (`postgresql+psycopg://` → `postgresql://`)."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme.split('+', 1)[0]}{sep}{rest}"


def lock_kind(tracking_uri: str) -> tuple[str, str | None]:
    """(kind, where) of the lock guarding alias moves for this store: ("postgres", URL), ("file", PATH) or
    ("none", None)."""
    env = os.environ.get(LOCK_URL_ENV, "").strip()
    if env:
        if not env.startswith(("postgresql", "postgres")):
            raise TrackingUnavailableError(f"{LOCK_URL_ENV}: expected a postgresql:// URL, got {env.split(':')[0]}:")
        return "postgres", _postgres_url(env)
    if tracking_uri.startswith(("postgresql", "postgres")):
        return "postgres", _postgres_url(tracking_uri)
    if tracking_uri.startswith("sqlite:///"):
        db = Path(tracking_uri[len("sqlite:///") :])
        return "file", str(db.parent / f"{db.name}.lock")
    if tracking_uri.startswith("file:"):
        return "file", str(Path(urlsplit(tracking_uri).path) / FILE_LOCK_NAME)
    if "://" not in tracking_uri:
        return "file", str(Path(tracking_uri) / FILE_LOCK_NAME)
    return "none", None


@contextlib.contextmanager
def registry_lock(tracking_uri: str, model_name: str, timeout_s: float | None = None) -> Iterator[str]:
    """Hold the lock guarding ``model_name``'s aliases in this store; yields what it is (for the log)."""
    timeout_s = lock_timeout() if timeout_s is None else timeout_s
    kind, where = lock_kind(tracking_uri)
    if kind == "postgres":
        assert where is not None
        with _advisory_lock(where, advisory_key(model_name), timeout_s):
            yield f"PostgreSQL advisory lock {advisory_key(model_name)}"
    elif kind == "file":
        assert where is not None
        with _file_lock(Path(where), timeout_s):
            yield f"file lock {where}"
    else:
        if tracking_uri not in _warned:
            _warned.add(tracking_uri)
            log.warning(
                "%s: no lock shared by this store's clients (set %s to its PostgreSQL database); alias moves re-read"
                " the alias first but are not compare-and-set",
                tracking_uri,
                LOCK_URL_ENV,
            )
        yield "none"


@contextlib.contextmanager
def _advisory_lock(url: str, key: int, timeout_s: float) -> Iterator[None]:
    import psycopg

    host = urlsplit(url).hostname or "localhost"
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(min(timeout_s, 10))))
    except psycopg.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise TrackingUnavailableError(f"registry lock: PostgreSQL at {host} is not reachable ({first})") from None
    try:
        deadline = time.monotonic() + timeout_s
        while not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:  # type: ignore[index]
            if time.monotonic() > deadline:
                raise TrackingUnavailableError(
                    f"registry lock: advisory lock {key} at {host} not granted within {timeout_s:g} s"
                    f" (another alias move holds it; {LOCK_TIMEOUT_ENV} sets the wait)"
                )
            time.sleep(_POLL_S)
        try:
            yield
        finally:
            with contextlib.suppress(psycopg.Error):
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
    finally:
        conn.close()  # the session's locks go with it


@contextlib.contextmanager
def _file_lock(path: Path, timeout_s: float) -> Iterator[None]:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise TrackingUnavailableError(f"registry lock {path}: {exc.strerror or exc}") from None
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TrackingUnavailableError(
                        f"registry lock {path}: not granted within {timeout_s:g} s ({LOCK_TIMEOUT_ENV} sets the wait)"
                    ) from None
                time.sleep(_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
