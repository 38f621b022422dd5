"""Harness overhead: how much of an episode's time goes to the world, the simulated user and grading, next to
the model, with the embedded default model's compute.

A randomly initialised model ends its episodes after one reply, so the episodes here are the oracle's (real
length, real tool traffic) with the model's cost paid for real at every agent turn: the embedded default's
shape (ModelConfig defaults, random weights) encodes the conversation with the codec and decodes as many
tokens as the oracle's reply has. Times per episode: model (agent_s), world (tool_s), user (user_s), grading
(timed apart), and the rest of the runner (wall − the three). Torch runs one thread (see `agentloop serve
--threads`).

    python bench/bench_harness_overhead.py [--tasks 40] [--trials 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from pipeline.agents.backends.hf import HFAgent, sample
from pipeline.authoring.templates import generate_tasks
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.formats.codec import encode_conversation, format_assistant
from pipeline.grading.grader import clear_expected_cache, grade
from pipeline.rollout.protocols import EpisodeInfo
from pipeline.rollout.runner import run_episode
from pipeline.rollout.trajectory import Message, Usage
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_openai_throughput import WORLD, build_default_shape_checkpoint  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class ModelCostOracle:
    """The oracle's decisions, with the model's compute for each of them spent for real."""

    name = "oracle+model-cost"

    def __init__(self, model: HFAgent) -> None:
        self.model, self.oracle = model, OracleAgent()

    def start(self, info: EpisodeInfo):
        return _Episode(self.model, self.oracle.start(info), info)


class _Episode:
    def __init__(self, model: HFAgent, inner, info: EpisodeInfo) -> None:
        self.model, self.inner, self.info = model, inner, info

    def act(self, messages: list[Message]) -> Message:
        t0 = time.perf_counter()
        m = self.model
        prompt = encode_conversation(
            messages, self.info.tools, self.info.policy, m.tokenizer, m.codec_config, add_generation_prompt=True
        ).ids
        reply = self.inner.act(messages)
        n = len(m.tokenizer(format_assistant(reply), add_special_tokens=False)["input_ids"]) + 1
        n = max(1, min(n, m.context - len(prompt)))
        sample(m.model, prompt, max_new_tokens=n, stop_ids=set())
        reply.usage = Usage(prompt_tokens=len(prompt), completion_tokens=n, compute_s=time.perf_counter() - t0)
        return reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "harness_overhead.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    world = load_world(WORLD)
    tasks = generate_tasks(world, args.tasks, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        model = HFAgent(build_default_shape_checkpoint(Path(tmp) / "m", world))
    agent = ModelCostOracle(model)
    run_episode(world, tasks[0], agent, ScriptedUser())  # warm-up
    clear_expected_cache()
    rows = []
    for task in tasks:
        for trial in range(args.trials):
            traj = run_episode(world, task, agent, ScriptedUser(), trial=trial)
            t0 = time.perf_counter()
            verdict = grade(world, task, traj)
            grade_s = time.perf_counter() - t0
            t = traj.timings
            rows.append(
                {
                    "wall": t.wall_s + grade_s,
                    "model": t.agent_s,
                    "world": t.tool_s,
                    "user": t.user_s,
                    "grading": grade_s,
                    "runner": t.wall_s - t.agent_s - t.tool_s - t.user_s,
                    "passed": verdict.passed,
                    "turns": sum(m.role == "assistant" for m in traj.messages),
                    "tokens": traj.agent_usage.prompt_tokens + traj.agent_usage.completion_tokens,
                }
            )
    total = {k: sum(r[k] for r in rows) for k in ("wall", "model", "world", "user", "grading", "runner")}
    harness = total["world"] + total["user"] + total["grading"] + total["runner"]
    result = {
        "model": "random weights, embedded default shape (ModelConfig()), 1 torch thread",
        "world": WORLD,
        "episodes": len(rows),
        "oracle_pass_rate": sum(r["passed"] for r in rows) / len(rows),
        "agent_turns_per_episode": round(statistics.mean(r["turns"] for r in rows), 1),
        "ms_per_episode": {k: round(1000 * v / len(rows), 2) for k, v in total.items()},
        "share_of_episode_time": {k: round(v / total["wall"], 4) for k, v in total.items() if k != "wall"},
        "harness_share": round(harness / total["wall"], 4),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "machine": {"python": platform.python_version(), "cpu_count": os.cpu_count(), "platform": platform.platform()},
    }
    ms = result["ms_per_episode"]
    print(
        f"{len(rows)} episodes, {result['agent_turns_per_episode']} agent turns each: model {ms['model']:.1f} ms, "
        f"world {ms['world']:.2f} ms, user {ms['user']:.2f} ms, grading {ms['grading']:.2f} ms, "
        f"runner {ms['runner']:.2f} ms; harness share {result['harness_share']:.2%}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
