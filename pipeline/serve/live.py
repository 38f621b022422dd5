"""A served model that can be replaced while it serves: `agentloop serve --model models:/NAME@ALIAS`.

`LiveEngine` is what the API serves: a stable name clients send, and behind it the engine of one version. A
request takes the current (engine, version) pair once, when it starts generating, and finishes on that engine,
whatever happens meanwhile; `swap` replaces the pair in one assignment (under a lock, so two swaps never
interleave). The old engine is not closed: it is dropped when the last request holding it finishes, so no
request in flight fails or changes model half-way.

`AliasWatcher` is how the server notices a move: a thread asks `resolve()` (e.g. the registry's
`get_model_version_by_alias`) every `interval_s` seconds; when the answer differs from the live version it
builds the new engine with `load(version)` beside the old one (which keeps serving), then swaps. A resolve or a
load that fails leaves the live version serving and is logged; the next poll tries again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from pipeline.errors import InputError
from pipeline.rollout import Message
from pipeline.serve.engine import Engine, Generation, GenerationParams

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Live:
    """One served version: its engine, its version and the name replies give it (e.g. ``agentloop-agent/3``)."""

    engine: Engine
    version: str
    model: str


class LiveEngine:
    """An engine whose version can be replaced while requests are in flight (each finishes on the one it began on)."""

    def __init__(self, name: str, engine: Engine, version: str, model: str | None = None) -> None:
        self.name = name
        self._swap_lock = threading.Lock()
        self._live = Live(engine, str(version), model or f"{name}/{version}")
        self.swaps = 0

    @property
    def live(self) -> Live:
        return self._live

    @property
    def version(self) -> str:
        return self._live.version

    @property
    def live_model(self) -> str:
        return self._live.model

    @property
    def context(self) -> int:
        return self._live.engine.context

    @property
    def max_token_bytes(self) -> int | None:
        return getattr(self._live.engine, "max_token_bytes", None)

    def generate(
        self, messages: list[Message], tools: list[dict], policy: str | None, params: GenerationParams
    ) -> Generation:
        live = self._live  # read once: this request runs on this version to its end
        gen = live.engine.generate(messages, tools, policy, params)
        gen.model = live.model
        return gen

    def swap(self, engine: Engine, version: str, model: str | None = None) -> Live:
        """Serve ``engine`` as ``version`` from the next request on; returns the version it replaced."""
        with self._swap_lock:
            old = self._live
            self._live = Live(engine, str(version), model or f"{self.name}/{version}")
            self.swaps += 1
        log.info("serving %s (was %s)", self._live.model, old.model)
        return old


class AliasWatcher:
    """Polls ``resolve()`` every ``interval_s`` seconds and rolls ``target`` over to the version it names."""

    def __init__(
        self,
        target: LiveEngine,
        resolve: Callable[[], str | None],
        load: Callable[[str], tuple[Engine, str]],
        interval_s: float = 10.0,
        on_swap: Callable[[Live, Live], None] | None = None,
    ) -> None:
        if interval_s <= 0:
            raise InputError(f"poll interval {interval_s}: expected seconds > 0")
        self.target, self.resolve, self.load, self.interval_s = target, resolve, load, interval_s
        self.on_swap = on_swap
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> bool:
        """One look at the alias; True when it rolled the server over to another version."""
        try:
            version = self.resolve()
        except Exception as exc:  # the registry down: keep serving what is live
            log.warning("alias check failed (%s); still serving %s", exc, self.target.live_model)
            return False
        if version is None or str(version) == self.target.version:
            return False
        try:
            engine, model = self.load(str(version))
        except Exception as exc:  # a version that will not load: keep serving the old one
            log.error("version %s did not load (%s); still serving %s", version, exc, self.target.live_model)
            return False
        old = self.target.swap(engine, str(version), model)
        if self.on_swap is not None:
            self.on_swap(old, self.target.live)
        return True

    def run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.poll()

    def start(self) -> AliasWatcher:
        self._thread = threading.Thread(target=self.run, name="alias-watcher", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
