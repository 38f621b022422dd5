"""Agents that misbehave on purpose, importable by Ray workers (a test module's classes are not)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from pipeline.domains.retail.oracle import OracleAgent
from pipeline.rollout.protocols import EpisodeInfo, InfrastructureError


class KillWorkerAgent(OracleAgent):
    """The oracle, except that starting `target` (task id, trial) kills the worker process, `times` times in all
    (counted with files in `marks`, which outlive the process)."""

    def __init__(self, target: tuple[str, int], marks: Path, times: int = 1) -> None:
        super().__init__()
        self.target, self.marks, self.times = target, Path(marks), times

    def start(self, info: EpisodeInfo):
        if (info.task.id, info.trial) == self.target:
            done = len(list(self.marks.glob("kill-*")))
            if done < self.times:
                (self.marks / f"kill-{done}").touch()
                os._exit(1)
        return super().start(info)


class FlakyAgent(OracleAgent):
    """The oracle, whose first attempt at every trial dies of an infrastructure error."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: Counter = Counter()

    def start(self, info: EpisodeInfo):
        key = (info.task.id, info.trial)
        self.starts[key] += 1
        if self.starts[key] == 1:
            raise InfrastructureError("endpoint hiccup")
        return super().start(info)


class BuggyAgent(OracleAgent):
    def start(self, info: EpisodeInfo):
        raise ValueError("a bug in the agent")


class SleepyAgent(OracleAgent):
    """The oracle, after `seconds` of sleep at the start of every trial (a slow or hung endpoint)."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def start(self, info: EpisodeInfo):
        import time

        time.sleep(self.seconds)
        return super().start(info)


class Blocker:
    """An actor that only holds the resources it was placed with."""

    def ready(self) -> bool:
        return True
