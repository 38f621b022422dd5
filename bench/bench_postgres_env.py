"""Episodes per second of the PostgreSQL example environment (examples/postgres_env), in process, with a scripted
agent: at 1 thread and at `--threads` episodes in flight, side by side in one run (the arms take turns).

An episode: `init` (the episode's transaction and its copies of the tables), identify the customer by email, read
the customer and a subscription, one write (a pause, or a cancellation where the subscription cannot be paused),
one refused write, `state()`, `query_data`, `reward()` (a second episode replays the gold action), `close`. Every
episode's reward must be 1.0. Reports episodes/s and per-call latency (p50, p95) for each arm.

The server is one of the bench's own (scripts/postgres.sh on a temporary directory and a free port) unless
AGENTLOOP_PG_URL names one.

    python bench/bench_postgres_env.py [--episodes 400] [--threads 16] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import host_machine, write_results  # noqa: E402

from examples.postgres_env import PostgresEnvironment, close_idle_connections  # noqa: E402
from examples.postgres_env.world import rows  # noqa: E402

WORLD = "pg-0"


def _server() -> tuple[str, dict[str, str] | None]:
    if url := os.environ.get("AGENTLOOP_PG_URL"):
        return url, None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "AGENTLOOP_PG_DIR": tempfile.mkdtemp(prefix="agentloop-pg-"), "AGENTLOOP_PG_PORT": str(port)}
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "postgres.sh"), "start"], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()[-1], env


def _plans() -> list[tuple[dict, dict, dict]]:
    """Per subscription: the task (gold: the write), the write, a write the policy refuses afterwards."""
    data = rows(int(WORLD.split("-")[1]))
    emails = {c["customer_id"]: c["email"] for c in data["customers"]}
    plans = []
    for sub in data["subscriptions"]:
        if sub["status"] == "cancelled":
            continue
        sid = sub["subscription_id"]
        if sub["status"] == "active" and sub["pauses_used"] < 2:
            write = {"name": "pause_subscription", "arguments": {"subscription_id": sid}}
        else:
            write = {"name": "cancel_subscription", "arguments": {"subscription_id": sid, "reason": "moving abroad"}}
        refused = {"name": "cancel_subscription", "arguments": {"subscription_id": sid, "reason": "again"}}
        if write["name"] == "pause_subscription":
            refused = {"name": "pause_subscription", "arguments": {"subscription_id": sid}}
        task = {"id": f"bench-{sid}", "world": WORLD, "customer_user_id": sub["customer_id"], "gold_actions": [write]}
        plans.append((task, write, refused, emails[sub["customer_id"]], sub))
    return plans


def episode(env: PostgresEnvironment, plan, latencies: list[float]) -> float:
    task, write, refused, email, sub = plan

    def timed(fn, *args, **kwargs):
        started = time.perf_counter()
        out = fn(*args, **kwargs)
        latencies.append(time.perf_counter() - started)
        return out

    timed(env.init, task)
    timed(env.run, {"name": "find_customer_by_email", "arguments": {"email": email}})
    timed(env.run, {"name": "get_customer", "arguments": {"customer_id": sub["customer_id"]}})
    timed(env.run, {"name": "get_subscription", "arguments": {"subscription_id": sub["subscription_id"]}})
    assert not timed(env.run, write).error
    assert timed(env.run, refused).error
    timed(env.state)
    timed(env.query_data, "subscriptions", {"customer_id": sub["customer_id"]})
    reward = timed(env.reward).reward
    timed(env.close)
    return reward


def arm(url: str, threads: int, episodes: int) -> dict:
    plans = _plans()
    latencies: list[list[float]] = [[] for _ in range(threads)]
    rewards: list[float] = []
    lock = threading.Lock()
    counter = {"next": 0}

    def worker(k: int) -> None:
        env = PostgresEnvironment(WORLD, url=url)
        while True:
            with lock:
                i = counter["next"]
                counter["next"] += 1
            if i >= episodes:
                return
            r = episode(env, plans[i % len(plans)], latencies[k])
            with lock:
                rewards.append(r)

    started = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    wall = time.perf_counter() - started
    calls = sorted(x for part in latencies for x in part)
    return {
        "threads": threads,
        "episodes": episodes,
        "wall_s": round(wall, 3),
        "episodes_per_s": round(episodes / wall, 1),
        "ms_per_episode": round(1000 * wall / episodes, 2),
        "calls": len(calls),
        "call_ms_p50": round(1000 * statistics.median(calls), 3),
        "call_ms_p95": round(1000 * calls[int(0.95 * (len(calls) - 1))], 3),
        "rewards_1": sum(r == 1.0 for r in rewards),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "postgres_env.json")
    args = parser.parse_args()
    load = os.getloadavg()
    url, server_env = _server()
    try:
        arm(url, 1, 20)  # warm: the base world created, connections opened
        results: dict[str, list[dict]] = {"1": [], str(args.threads): []}
        for _ in range(args.rounds):
            for threads in (1, args.threads):
                results[str(threads)].append(arm(url, threads, args.episodes))
                print(results[str(threads)][-1], flush=True)
        close_idle_connections()
    finally:
        if server_env is not None:
            subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "stop"], env=server_env, check=False)
            subprocess.run(["rm", "-rf", server_env["AGENTLOOP_PG_DIR"]], check=False)
    best = {k: max(v, key=lambda r: r["episodes_per_s"]) for k, v in results.items()}
    report = {
        "bench": "postgres_env",
        "world": WORLD,
        "machine": host_machine(load),
        "server": "PostgreSQL from scripts/postgres.sh (fsync off), local TCP",
        "best": best,
        "rounds": results,
        "speedup_in_flight": round(best[str(args.threads)]["episodes_per_s"] / best["1"]["episodes_per_s"], 2),
    }
    write_results(args.out, report)
    print({k: (v["episodes_per_s"], v["call_ms_p50"], v["call_ms_p95"]) for k, v in best.items()})


if __name__ == "__main__":
    main()
