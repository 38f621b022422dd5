"""Run an `agentloop` command and kill it with SIGKILL at a chosen point of its writing:

    python -m tests.killpoint N ARGS...

runs `agentloop ARGS...` in this process and sends itself SIGKILL at the N-th `os.fsync` (every file a command
publishes is flushed before it is renamed into place: atomic file writes, staged folders, journals), so the kill
lands after some of the output has been written and before the rest. No clean-up or `finally` runs, as with
`kill -9`. Exit status -9 means the kill happened; any other, that the command finished first.
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> None:
    target = int(sys.argv[1])
    calls = 0
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        nonlocal calls
        calls += 1
        if calls == target:
            os.kill(os.getpid(), signal.SIGKILL)
        real_fsync(fd)

    os.fsync = fsync
    sys.argv = ["agentloop", *sys.argv[2:]]
    from pipeline.cli import app

    app()


if __name__ == "__main__":
    main()
