"""A server started as a subprocess, waited for until it answers (or named when it exits or never does)."""

from __future__ import annotations

import subprocess
import time
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
