"""Episodes in flight for an outside checkpoint through the hf backend: one at a time vs `PaddedDecoder` batches.

The same trials (a small generated world, the scripted customer) are measured with 1, then each `--concurrency`
episodes in flight, in one process; the model is a checkpoint with its own chat template (prefill of its
~4k-token prompt runs alone, decoding steps run batched through the model's own forward). Reports wall time,
generated tokens per second, the speed-ups, and how many trajectories and verdicts equal one at a time's.

`--random-weights` takes a checkpoint directory holding only a config and a tokenizer (bench/gpu_fixture.py's
output with its weights deleted travels in a few megabytes) and initialises its weights from the seed, so a
GPU machine can run a model of a real size without downloading one.

    python bench/bench_hf_in_flight.py --checkpoint DIR [--random-weights] [--device cuda] [--dtype bfloat16]
        [--tasks 16] [--trials 2] [--concurrency 8,32] [--max-new-tokens 32] [--max-turns 16]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.agents.backends.hf import HFAgent  # noqa: E402
from pipeline.agents.backends.hf_padded import PaddedDecoder  # noqa: E402
from pipeline.authoring.templates import generate_tasks  # noqa: E402
from pipeline.rollout.runner import Limits  # noqa: E402
from pipeline.rollout.trajectory import Trajectory  # noqa: E402
from pipeline.trials.executor import SerialExecutor  # noqa: E402
from pipeline.users.scripted import ScriptedUser  # noqa: E402
from pipeline.world.registry import load_world  # noqa: E402


def with_random_weights(config_dir: Path, dtype: str, seed: int) -> Path:
    """A copy of `config_dir` (config and tokenizer) with seeded random weights saved in `dtype`."""
    from transformers import AutoConfig, AutoModelForCausalLM

    out = Path(tempfile.mkdtemp(prefix="bench-hf-in-flight-"))
    for f in config_dir.iterdir():
        if f.is_file() and not f.name.endswith(".safetensors") and f.name != "agentloop.json":
            shutil.copy(f, out / f.name)
    config = AutoConfig.from_pretrained(str(out))
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config).to(getattr(torch, dtype))
    model.save_pretrained(str(out))
    return out


def comparable(trajectory: Trajectory) -> str:
    return trajectory.without_timings().model_dump_json(exclude={"agent_usage", "agent"})


def run_arm(world, tasks, agent, trials: int, width: int, limits: Limits) -> dict:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    started = time.perf_counter()
    results = list(SerialExecutor(batch=width).run(world, tasks, agent, ScriptedUser(), trials, 0, limits))
    wall = time.perf_counter() - started
    tokens = sum(u.completion_tokens for r in results for u in _usages(r.trajectory))
    return {
        "wall_s": wall,
        "tokens": tokens,
        "out": {(r.task.id, r.trial): (r.verdict.passed, comparable(r.trajectory)) for r in results},
    }


def same(one: dict, arm: dict, field: int) -> int:
    """Trials whose verdict (field 0) or trajectory (1) equals one at a time's."""
    return sum(one["out"][t][field] == arm["out"][t][field] for t in one["out"])


def _usages(trajectory: Trajectory):
    return [m.usage for m in trajectory.messages if m.role == "assistant" and m.usage is not None]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", type=Path, required=True)
    ap.add_argument("--random-weights", action="store_true", help="initialise the weights from --seed")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--world", default="gen-5-8x30x60")
    ap.add_argument("--tasks", type=int, default=16)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--concurrency", default="8,32", help="comma-separated widths beside one at a time")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--max-turns", type=int, default=16)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--out", type=Path, default=Path("bench/results/hf_in_flight.json"))
    args = ap.parse_args()
    path = with_random_weights(args.checkpoint, args.dtype, args.seed) if args.random_weights else args.checkpoint
    agent = HFAgent(
        path,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        device=args.device,
        dtype=args.dtype,
        threads=None,
    )
    device_type = next(agent.model.parameters()).device.type
    assert isinstance(agent.decoder(), PaddedDecoder), "this checkpoint is decoded one episode at a time"
    world = load_world(args.world)
    tasks = generate_tasks(world, args.tasks, seed=0)
    limits = Limits(max_turns=args.max_turns)
    widths = [1, *(int(w) for w in args.concurrency.split(","))]
    run_arm(world, tasks[:1], agent, 1, 1, limits)  # warm-up: kernels, allocator
    arms = {}
    for width in widths:
        arms[width] = run_arm(world, tasks, agent, args.trials, width, limits)
        a = arms[width]
        print(f"{width:>3} in flight: {a['wall_s']:.1f} s, {a['tokens'] / a['wall_s']:.0f} tokens/s", flush=True)
    one = arms[1]
    n_params = sum(p.numel() for p in agent.model.parameters())
    result = {
        "model": {
            "architecture": type(agent.model).__name__,
            "parameters": n_params,
            "layers": agent.model.config.num_hidden_layers,
            "hidden": agent.model.config.hidden_size,
            "vocab": agent.model.config.vocab_size,
            "dtype": args.dtype,
            "device": torch.cuda.get_device_name(0) if device_type == "cuda" else "cpu",
        },
        "trials": len(one["out"]),
        "max_new_tokens": args.max_new_tokens,
        "max_turns": args.max_turns,
        "wall_s": {w: round(a["wall_s"], 2) for w, a in arms.items()},
        "tokens_per_s": {w: round(a["tokens"] / a["wall_s"], 1) for w, a in arms.items()},
        "speedup": {w: round(one["wall_s"] / a["wall_s"], 2) for w, a in arms.items()},
        "identical_trajectories": {w: same(one, a, 1) for w, a in arms.items()},
        "identical_verdicts": {w: same(one, a, 0) for w, a in arms.items()},
        "torch": torch.__version__,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
