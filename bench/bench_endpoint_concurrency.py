"""Measuring through the `openai` backend against an endpoint with a fixed latency: throughput by concurrency.

A real endpoint's time is the server's, not ours, so what episodes in flight buy is overlap: with C episodes in
flight, C requests wait on the server at once. This bench starts an OpenAI-compatible HTTP server on loopback
that answers every chat-completions request after a fixed `--latency-ms` (one thread per connection, like a
server with continuous batching and room to spare), and measures the same tasks × trials through `measure`'s
batched runner (`SerialExecutor(batch=C)`, the `openai` agent over the official SDK, the scripted customer) at
each `--levels` concurrency. The reply is the same short question each time, so the customer keeps talking and
every episode makes several requests. Reported per level: wall time, requests/s, trials/s, the most requests the
server saw at once, and the speed-up over one at a time (the ideal is the concurrency itself, until the
episodes' own work or the client shows). Verdicts must not depend on the level.

    python bench/bench_endpoint_concurrency.py [--levels 1 2 4 8 16 32] [--latency-ms 100] [--tasks 16]
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from machine import torch_machine

from pipeline.agents.registry import make_agent
from pipeline.authoring.templates import generate_tasks
from pipeline.trials.executor import SerialExecutor
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world

ROOT = Path(__file__).resolve().parents[1]
REPLY = "Could you tell me a little more about what you need?"


class FixedLatencyServer:
    """Chat completions after a fixed delay; counts requests and the most in flight at once."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.lock = threading.Lock()
        self.requests = self.now = self.peak = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a production server does
            wbufsize = 1 << 16  # headers and body leave in one write (no delayed-ACK stall between them)
            disable_nagle_algorithm = True

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length", 0)))
                with server.lock:
                    server.requests += 1
                    server.now += 1
                    server.peak = max(server.peak, server.now)
                time.sleep(server.latency_s)
                with server.lock:
                    server.now -= 1
                body = {
                    "id": "chatcmpl-bench",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "fixed",
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}
                    ],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112},
                }
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.thread = threading.Thread(target=self.http.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def reset(self) -> None:
        with self.lock:
            self.requests = self.now = self.peak = 0

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    ap.add_argument("--latency-ms", type=float, default=100.0)
    ap.add_argument("--tasks", type=int, default=16)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--world", default="gen-101")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "endpoint_concurrency.json"))
    args = ap.parse_args()
    world = load_world(args.world)
    tasks = generate_tasks(world, args.tasks, seed=0)
    server = FixedLatencyServer(args.latency_ms / 1000)
    os.environ["AGENTLOOP_BASE_URL"] = server.base_url
    agent = make_agent("openai:fixed,temperature=0")
    levels, verdicts = [], {}
    try:
        for level in args.levels:
            server.reset()
            started = time.perf_counter()
            results = list(SerialExecutor(batch=level).run(world, tasks, agent, ScriptedUser(), args.trials, seed=0))
            wall = time.perf_counter() - started
            verdicts[level] = sorted((r.task.id, r.trial, r.verdict.passed, r.verdict.infra_error) for r in results)
            levels.append(
                {
                    "concurrency": level,
                    "trials": len(results),
                    "requests": server.requests,
                    "wall_s": round(wall, 2),
                    "requests_per_s": round(server.requests / wall, 1),
                    "trials_per_s": round(len(results) / wall, 2),
                    "peak_in_flight": server.peak,
                    "infra_errors": sum(r.verdict.infra_error for r in results),
                }
            )
            print(json.dumps(levels[-1]), flush=True)
    finally:
        server.close()
    base = levels[0]["requests_per_s"]
    for lv in levels:
        lv["speedup"] = round(lv["requests_per_s"] / base, 2)
        lv["efficiency"] = round(lv["speedup"] / (lv["concurrency"] / levels[0]["concurrency"]), 2)
    first = verdicts[args.levels[0]]
    result = {
        "latency_ms": args.latency_ms,
        "tasks": args.tasks,
        "trials": args.trials,
        "levels": levels,
        "same_verdicts_at_every_level": all(v == first for v in verdicts.values()),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "machine": torch_machine(),
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "levels"}, indent=2))


if __name__ == "__main__":
    main()
