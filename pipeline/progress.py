"""Progress a person can watch: a rich bar in a terminal, a log line every tenth of the work otherwise.

Long stages (measure, curate's probes, SFT, remeasure, GRPO) run for minutes; under `dvc repro` in a terminal they
draw a bar with the work done, the passes so far, the rate and the time left, and when the output is not a
terminal (CI, `dvc repro | tee`) they log one line each time another tenth of the work is done.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

log = logging.getLogger("agentloop.progress")


class _RateColumn(ProgressColumn):
    """Items per second (rich's own speed column speaks of bytes)."""

    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:.2f} {self.unit}/s", style="progress.data.speed")


class Tracker:
    """Counts work done (and passes, where the work has a verdict) and shows it; `advance` is all callers use."""

    def __init__(self, description: str, total: int | None, unit: str, stream: IO[str] | None):
        self.description, self.total, self.unit = description, total, unit
        self.done = self.passed = 0
        self.has_verdicts = False
        self.started = time.monotonic()
        self._next_log = self._step()
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._stream = stream

    def _step(self) -> int:
        return max(1, math.ceil(self.total / 10)) if self.total else 10

    def advance(self, passed: bool | None = None, n: int = 1) -> None:
        """`n` more items done; `passed` is the verdict of the item when it has one (a trial), else None."""
        self.done += n
        if self.total and self.done > self.total:  # more work than announced (a task's twin, say): never over 100%
            self.set_total(self.done)
        if passed is not None:
            self.has_verdicts = True
            self.passed += int(bool(passed))
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, advance=n, passed=self._passed_text())
        elif self.done >= self._next_log or (self.total and self.done >= self.total):
            log.info("%s", self.line())
            while self._next_log <= self.done:
                self._next_log += self._step()

    def set_total(self, total: int) -> None:
        self.total = total
        self._next_log = min(self._next_log, self._step())
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, total=total)

    def _passed_text(self) -> str:
        return f"{self.passed} passed" if self.has_verdicts else ""

    def line(self) -> str:
        """One log line: `measure: 160/800 trials (20%), 52 passed, 1.90 trials/s, about 5m 36s left`."""
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        parts = [f"{self.description}: {self.done}" + (f"/{self.total}" if self.total else "") + f" {self.unit}"]
        if self.total:
            parts[0] += f" ({100 * self.done / self.total:.0f}%)"
        if self.has_verdicts:
            parts.append(f"{self.passed} passed")
        parts.append(f"{rate:.2f} {self.unit}/s")
        if self.total and rate > 0 and self.done < self.total:
            parts.append(f"about {_duration((self.total - self.done) / rate)} left")
        elif self.total and self.done >= self.total:
            parts.append(f"done in {_duration(elapsed)}")
        return ", ".join(parts)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def is_terminal(stream: IO[str] | None = None) -> bool:
    stream = stream or sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


@contextmanager
def track(
    description: str,
    total: int | None,
    unit: str = "trials",
    *,
    terminal: bool | None = None,
    console: Console | None = None,
) -> Iterator[Tracker]:
    """Show progress of `total` items for the block's duration; `terminal=None` asks whether stderr is a terminal."""
    tracker = Tracker(description, total, unit, None)
    if terminal is None:
        terminal = is_terminal(console.file if console else None)
    if not terminal:
        yield tracker
        if tracker.total is None or tracker.done < tracker.total:
            log.info("%s", tracker.line())
        return
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[passed]}"),
        _RateColumn(unit),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=console or Console(stderr=True),
        transient=False,
    )
    with bar:
        tracker._bar = bar
        tracker._task = bar.add_task(escape(description), total=total, passed="")  # a name may hold [ ]
        yield tracker
