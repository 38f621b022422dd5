"""The environment boundary's cost: episodes per second and per-call latency with scripted agents at 16 in flight,
in process, over HTTP, over MCP and on PostgreSQL, side by side in one run (the arms take turns, round by round).

Two levels:

- **protocol**: a scripted driver replays each task's gold actions through the six functions — `init(task)`, every
  gold call through `run` (over MCP: `tools/call` on the episode's MCP URL), `state()`, `close()` — on retail's
  evaluation world (its generated held-out tasks) in process (`pipeline.environment.Environment`), over HTTP
  (`ServedEnvironment` against `agentloop env serve` in its own process), over MCP (the same service), and on the
  PostgreSQL example environment (its own generated tasks' gold).
- **loop**: `measure` of the scripted oracle on the same retail tasks (customer, agent, grading with its replay):
  the built-in domain in process, the same world through the protocol in process (the adapter over the in-memory
  environment) and through `http://` (the adapter over the service). The issue's goal is HTTP at most 1.5× the
  in-process time per episode.

    python bench/bench_env_speed.py [--tasks 48] [--threads 16] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
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

WORLD = "gen-101"
MEMORY = "tests.environment.protocol_fixtures:MemoryRetail"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve() -> tuple[str, subprocess.Popen]:
    port = _port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENTLOOP_LOG": "WARNING"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "env", "serve", "--domain", "retail", "--worlds", WORLD, "--port",
         str(port), "--max-episodes", "4000"],  # fmt: skip
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    import httpx

    for _ in range(600):
        try:
            if httpx.get(f"{url}/worlds", timeout=1).status_code == 200:
                return url, proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("agentloop env serve did not come up")


def _postgres() -> tuple[str, dict | None]:
    if url := os.environ.get("AGENTLOOP_PG_URL"):
        return url, None
    env = {
        **os.environ,
        "AGENTLOOP_PG_DIR": tempfile.mkdtemp(prefix="agentloop-pg-"),
        "AGENTLOOP_PG_PORT": str(_port()),
    }
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "postgres.sh"), "start"], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()[-1], env


def _drive(make, tasks: list, threads: int, mcp: bool = False) -> dict:
    """Every task's gold replayed through the protocol, `threads` episodes in flight; wall time and latencies."""
    from pipeline.environment import McpEnvironmentClient

    latencies: list[float] = []
    call_latencies: list[float] = []
    lock, queue = threading.Lock(), list(tasks)

    def worker() -> None:
        env = make()
        while True:
            with lock:
                if not queue:
                    break
                task = queue.pop()
            started = time.perf_counter()
            env.init(task.model_dump(mode="json"), authenticated_user_id=task.customer_user_id)
            client = McpEnvironmentClient(env.mcp_url) if mcp else None
            for action in task.gold_actions:
                t = time.perf_counter()
                if client is not None:
                    client.call(action.name, action.arguments)
                else:
                    env.run({"name": action.name, "arguments": action.arguments})
                with lock:
                    call_latencies.append(time.perf_counter() - t)
            if client is not None:
                client.close()
            env.state()
            env.close()
            with lock:
                latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    wall = time.perf_counter() - started
    return {
        "episodes": len(latencies),
        "episodes_per_s": round(len(latencies) / wall, 2),
        "episode_ms_p50": round(1000 * statistics.median(latencies), 2),
        "call_ms_p50": round(1000 * statistics.median(call_latencies), 3),
        "call_ms_p95": round(1000 * statistics.quantiles(call_latencies, n=20)[-1], 3),
    }


def _measure(domain: str, tasks_file: Path, threads: int, out: Path) -> dict:
    from pipeline.measure import MeasureConfig, measure

    shutil.rmtree(out, ignore_errors=True)
    config = MeasureConfig(
        world=WORLD, domain=domain, tasks=str(tasks_file), agent="oracle", trials=1, concurrency=threads
    )
    started = time.perf_counter()
    summary = measure(config, out)
    wall = time.perf_counter() - started
    trials = summary.model_dump()["cost"]["trials"]
    return {
        "trials": trials,
        "trials_per_s": round(trials / wall, 2),
        "pass_hat_1": summary.model_dump()["pass_hat_k"]["1"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=48)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "env_speed.json")
    args = parser.parse_args()
    load = os.getloadavg()

    from examples.postgres_env import PostgresEnvironment
    from pipeline.dataset import write_tasks
    from pipeline.environment import Environment
    from pipeline.protocol.client import ServedEnvironment
    from pipeline.world import load_world

    world = load_world(WORLD, "retail")
    tasks = world.domain.require("tasks")(world, args.tasks, seed=0)
    pg_url, pg_env = _postgres()
    os.environ["AGENTLOOP_PG_URL"] = pg_url
    pg_world = load_world("pg-0", "examples.postgres_env:PostgresEnvironment")
    pg_tasks = pg_world.domain.require("tasks")(pg_world, args.tasks, seed=0)
    url, server = _serve()
    scratch = Path(tempfile.mkdtemp(prefix="env-speed-"))
    tasks_file = scratch / "tasks.jsonl"
    write_tasks(tasks_file, tasks)
    arms = {
        "protocol/in_process": lambda: _drive(lambda: Environment("retail", WORLD), tasks, args.threads),
        "protocol/http": lambda: _drive(lambda: ServedEnvironment(url, WORLD), tasks, args.threads),
        "protocol/mcp": lambda: _drive(lambda: ServedEnvironment(url, WORLD), tasks, args.threads, mcp=True),
        "protocol/postgres": lambda: _drive(lambda: PostgresEnvironment("pg-0"), pg_tasks, args.threads),
        "loop/in_process": lambda: _measure("retail", tasks_file, args.threads, scratch / "native"),
        "loop/protocol_in_process": lambda: _measure(MEMORY, tasks_file, args.threads, scratch / "memory"),
        "loop/http": lambda: _measure(url, tasks_file, args.threads, scratch / "http"),
    }
    results: dict[str, list[dict]] = {name: [] for name in arms}
    try:
        for round_ in range(args.rounds):
            for name, run in arms.items():
                results[name].append(run())
                print(f"round {round_ + 1} {name}: {results[name][-1]}", flush=True)
    finally:
        os.killpg(server.pid, 15)
        if pg_env is not None:
            subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "stop"], env=pg_env, check=False)
    best = {
        name: max(runs, key=lambda r: r.get("episodes_per_s", r.get("trials_per_s", 0)))
        for name, runs in results.items()
    }
    ratio = {
        "protocol_http_over_in_process": round(
            best["protocol/in_process"]["episodes_per_s"] / best["protocol/http"]["episodes_per_s"], 2
        ),
        "loop_http_over_in_process": round(
            best["loop/in_process"]["trials_per_s"] / best["loop/http"]["trials_per_s"], 2
        ),
        "loop_http_over_protocol_in_process": round(
            best["loop/protocol_in_process"]["trials_per_s"] / best["loop/http"]["trials_per_s"], 2
        ),
    }
    report = {
        "machine": host_machine(load),
        "config": vars(args) | {"out": str(args.out), "world": WORLD},
        "runs": results,
        "best": best,
        "time_per_episode_ratio": ratio,
    }
    write_results(args.out, report)
    print(ratio)


if __name__ == "__main__":
    main()
