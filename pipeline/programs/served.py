"""A checkpoint served for agent programs: `program:…,serve=PATH` runs `agentloop serve` of PATH for the process.

A program's model is an OpenAI-compatible endpoint; to measure a program on a checkpoint the loop trains (its
baseline, then the candidate), the harness serves the checkpoint itself: `served_checkpoint(path, name)` starts
`agentloop serve --model PATH --name NAME` in a subprocess on a free port the first time the process asks, waits
for its `/health`, and keeps it for every later episode; it stops when the process exits. The same code path
serves it as `agentloop serve` run by hand (the checkpoint's chat format, its tool-call parser, `return_token_ids`),
so the proxy records token ids as the program's model sampled them.

A server that does not come up is infrastructure (`ServeError`): the trial is excluded, not failed.
"""

from __future__ import annotations

import atexit
import logging
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from pipeline.errors import InfrastructureError

log = logging.getLogger(__name__)
START_TIMEOUT_S = 600.0
"""How long a server may take to load its checkpoint (a loaded 2-core machine loads SmolLM2 in about a minute)."""


class ServeError(InfrastructureError):
    """`agentloop serve` of a program's checkpoint did not come up (or exited)."""


_SERVERS: dict[tuple[str, str, int], tuple[subprocess.Popen, str]] = {}
_LOCK = threading.Lock()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def served_checkpoint(path: str | Path, name: str, max_tokens: int = 256, concurrency: int = 2) -> str:
    """The base URL (…/v1) of `agentloop serve` of `path` under the model name `name`, started on first use."""
    key = (str(Path(path).resolve()), name, max_tokens)
    with _LOCK:
        if key in _SERVERS and _SERVERS[key][0].poll() is None:
            return _SERVERS[key][1]
        port = _free_port()
        output = tempfile.NamedTemporaryFile(prefix="agentloop-serve-", suffix=".log", delete=False)  # noqa: SIM115
        command = [
            sys.executable, "-m", "pipeline.cli", "serve", "--model", key[0], "--name", name, "--port", str(port),
            "--max-tokens", str(max_tokens), "--max-concurrency", str(concurrency), "--threads", "1",
        ]  # fmt: skip
        proc = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ServeError(f"agentloop serve of {path} exited {proc.returncode} (its output: {output.name})")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        else:
            proc.terminate()
            raise ServeError(
                f"agentloop serve of {path}: no answer in {START_TIMEOUT_S:g} s (its output: {output.name})"
            )
        log.info("serving %s as %r at %s for agent programs", path, name, url)
        _SERVERS[key] = (proc, f"{url}/v1")
        return f"{url}/v1"


@atexit.register
def stop_all() -> None:
    """Stop every server this process started."""
    with _LOCK:
        for proc, _ in _SERVERS.values():
            if proc.poll() is None:
                proc.terminate()
        for proc, _ in _SERVERS.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        _SERVERS.clear()
