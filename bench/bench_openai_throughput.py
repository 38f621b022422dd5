"""Throughput of the `openai` backend against `agentloop serve` at several concurrency levels.

Serves a checkpoint (by default a freshly built, randomly initialised model of the embedded default's shape:
the real compute cost, meaningless text) with `agentloop serve --max-concurrency C`. The requests are real
agent turns: every point where the agent acts in oracle episodes (policy, tools, the conversation so far),
sent through the openai backend (`OpenAIAgent.act`) from C client threads at once. A random model would end
its own episodes after one reply, so replaying real prefixes keeps the prompt lengths of a real run.
Reported per level: requests/s, completion tokens/s, mean and p95 latency, errors (must be 0). Greedy,
`--max-tokens` per reply.

    python bench/bench_openai_throughput.py [--levels 1 2 4] [--requests 48] [--model DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from pipeline.agents.backends.openai import OpenAIAgent, SamplingConfig
from pipeline.authoring.templates import generate_tasks
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.domains.retail.policy import POLICY_SUMMARY
from pipeline.domains.retail.tools import TOOLS
from pipeline.endpoint.client import ChatClient, EndpointConfig
from pipeline.formats.codec import CodecConfig
from pipeline.rollout.protocols import EpisodeInfo, InfrastructureError
from pipeline.rollout.runner import run_episode
from pipeline.rollout.trajectory import Message
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world

ROOT = Path(__file__).resolve().parents[1]
WORLD = "gen-0-20x100x200"


def build_default_shape_checkpoint(directory: Path, world) -> Path:
    """A random model of the embedded default's shape (ModelConfig defaults), compact codec, trained tokenizer."""
    from pipeline.agents.checkpoint import CheckpointMeta, ModelConfig, save_checkpoint
    from pipeline.embedded.model import build_model
    from pipeline.embedded.tokenizer import build_corpus, train_tokenizer

    tokenizer = train_tokenizer(build_corpus(world, 50))
    config = ModelConfig()
    codec = CodecConfig(system="compact", tool_results="compact", policy_summary=POLICY_SUMMARY)
    return save_checkpoint(
        directory, build_model(config, tokenizer), tokenizer, CheckpointMeta.for_codec(codec, model=config)
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model: Path, name: str, concurrency: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipeline.cli",
            "serve",
            "--model",
            str(model),
            "--name",
            name,
            "--port",
            str(port),
            "--max-concurrency",
            str(concurrency),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url + "/v1"
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("agentloop serve did not start")


def agent_turns(world, tasks) -> list[tuple[EpisodeInfo, list[Message]]]:
    """(episode info, conversation so far) at every assistant turn of oracle episodes."""
    out = []
    for task in tasks:
        traj = run_episode(world, task, OracleAgent(), ScriptedUser())
        info = EpisodeInfo(task=task, trial=0, seed=0, policy=world.policy, tools=TOOLS.schemas())
        out += [(info, traj.messages[:i]) for i, m in enumerate(traj.messages) if m.role == "assistant"]
    return out


def run_level(url: str, name: str, turns, concurrency: int, max_tokens: int) -> dict:
    client = ChatClient(EndpointConfig(base_url=url, timeout_s=300, max_retries=0))
    agent = OpenAIAgent(name, client, SamplingConfig(temperature=0.0, max_tokens=max_tokens))
    errors = []

    def act(turn) -> Message | None:
        info, messages = turn
        try:
            return agent.start(info).act(messages)
        except InfrastructureError as exc:
            errors.append(str(exc))
            return None

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        answered = [m for m in pool.map(act, turns) if m is not None]
    wall = time.perf_counter() - t0
    replies = [m for m in answered if m.latency_s is not None]  # the others overflowed the context (HTTP 400)
    latencies = sorted(m.latency_s for m in replies)
    return {
        "concurrency": concurrency,
        "requests": len(turns),
        "context_overflows": len(answered) - len(replies),
        "wall_s": round(wall, 2),
        "requests_per_s": round(len(replies) / wall, 2),
        "completion_tokens_per_s": round(sum(m.usage.completion_tokens for m in replies) / wall, 1),
        "prompt_tokens_mean": round(statistics.mean(m.usage.prompt_tokens for m in replies), 1),
        "latency_mean_s": round(statistics.mean(latencies), 3),
        "latency_p95_s": round(latencies[int(0.95 * (len(latencies) - 1))], 3),
        "errors": len(errors),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument(
        "--model", type=Path, default=None, help="Checkpoint to serve (default: random, default shape)."
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "openai_throughput.json")
    args = parser.parse_args()

    world = load_world(WORLD)
    turns = agent_turns(world, generate_tasks(world, max(1, args.requests // 4), seed=0))[: args.requests]
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or build_default_shape_checkpoint(Path(tmp) / "default-shape", world)
        levels = []
        for c in args.levels:
            proc, url = start_server(model, "bench", c)
            try:
                run_level(url, "bench", turns[:2], c, args.max_tokens)  # warm-up
                levels.append(run_level(url, "bench", turns, c, args.max_tokens))
            finally:
                proc.terminate()
                proc.wait(timeout=30)
            lv = levels[-1]
            print(
                f"concurrency {c}: {lv['requests_per_s']:.2f} req/s, {lv['completion_tokens_per_s']:.0f} tok/s, "
                f"latency {lv['latency_mean_s']:.3f}s (p95 {lv['latency_p95_s']:.3f}s), errors {lv['errors']}"
            )
    base = levels[0]["requests_per_s"]
    result = {
        "model": str(args.model) if args.model else "random weights, embedded default shape (ModelConfig())",
        "world": WORLD,
        "max_tokens": args.max_tokens,
        "levels": levels,
        "speedup_vs_concurrency_1": {str(lv["concurrency"]): round(lv["requests_per_s"] / base, 2) for lv in levels},
        "load_average_1m": round(os.getloadavg()[0], 2),
        "machine": {"python": platform.python_version(), "cpu_count": os.cpu_count(), "platform": platform.platform()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
