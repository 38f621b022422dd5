"""Memory of `agentloop env serve` over many episodes: the server's resident memory (RSS) as 10,000 episodes are
opened, used and closed or abandoned, at 16 in flight.

The service runs as its own process (`agentloop env serve --domain retail --worlds WORLD`, default TTL and
episode bound unless given); clients in threads drive it through `ServedEnvironment`. Each episode starts
authenticated as a customer of the world, reads that customer, changes their address (a write), reads the state and
the call record; one in `--abandon` (default 3) is then left open instead of closed, so the service's bound
(`--max-episodes`, least recently used idle episode closed first) is what frees it. The server's RSS is read from
/proc at every `--every` episodes; memory is bounded when it stops growing once the registry is full.

    python bench/env_memory.py [--episodes 10000] [--concurrency 16] [--world gen-101] [--abandon 3]
        [--max-episodes 1000] [--every 1000] [--out bench/results/env_memory.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.protocol.client import ServedEnvironment, served_worlds  # noqa: E402

ADDRESS = {"address1": "1 Bench St", "address2": "", "city": "X", "country": "USA", "state": "CA", "zip": "00001"}


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--world", default="gen-101")
    parser.add_argument("--abandon", type=int, default=3, help="One episode in N is left open (0: none).")
    parser.add_argument("--max-episodes", type=int, default=1000)
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "env_memory.json")
    args = parser.parse_args()

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "pipeline.cli", "env", "serve", "--domain", "retail", "--worlds", args.world]
    cmd += ["--port", str(port), "--max-episodes", str(args.max_episodes)]
    server = subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.time() + 120
        while True:
            try:
                served_worlds(url, timeout=2)
                break
            except Exception:  # noqa: BLE001 - not up yet
                if server.poll() is not None or time.time() > deadline:
                    raise SystemExit("agentloop env serve did not come up") from None
                time.sleep(0.3)
        users = list(ServedEnvironment(url, args.world).query_data("users"))
        samples = [{"episodes": 0, "rss_mib": rss_mib(server.pid), "seconds": 0.0}]
        done, lock, errors = 0, threading.Lock(), []
        started = time.perf_counter()

        def episode(i: int) -> None:
            nonlocal done
            user = users[i % len(users)]
            env = ServedEnvironment(url, args.world)
            try:
                env.init(authenticated_user_id=user)
                env.run({"name": "get_user_details", "arguments": {"user_id": user}})
                env.run({"name": "modify_user_address", "arguments": {"user_id": user, **ADDRESS}})
                env.state()
                env.calls()
                if not (args.abandon and i % args.abandon == 0):
                    env.close()
            except Exception as exc:  # noqa: BLE001 - counted and reported
                errors.append(f"{type(exc).__name__}: {exc}")
            with lock:
                done += 1
                if done % args.every == 0:
                    sample = {"episodes": done, "rss_mib": rss_mib(server.pid)}
                    sample["seconds"] = round(time.perf_counter() - started, 2)
                    samples.append(sample)
                    print(json.dumps(sample), flush=True)

        with ThreadPoolExecutor(args.concurrency) as pool:
            list(pool.map(episode, range(args.episodes)))
        elapsed = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(timeout=30)
    # the registry is full once the abandoned episodes alone fill it; from then on memory should stay flat
    filled_at = args.max_episodes * args.abandon if args.abandon else args.episodes
    full = [s["rss_mib"] for s in samples if s["episodes"] >= filled_at] or [samples[-1]["rss_mib"]]
    result = {
        "bench": "env_memory",
        "setup": {
            "episodes": args.episodes,
            "concurrency": args.concurrency,
            "world": args.world,
            "abandoned_one_in": args.abandon,
            "max_episodes": args.max_episodes,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
        },
        "samples": samples,
        "errors": len(errors),
        "first_errors": errors[:5],
        "episodes_per_s": round(args.episodes / elapsed, 1),
        "rss_start_mib": round(samples[0]["rss_mib"], 1),
        "rss_end_mib": round(samples[-1]["rss_mib"], 1),
        "registry_full_at_episodes": filled_at,
        "rss_growth_after_full_mib": round(max(full) - min(full), 2),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))


if __name__ == "__main__":
    main()
