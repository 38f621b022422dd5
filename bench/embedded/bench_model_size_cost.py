"""What a bigger embedded model would cost the loop on this machine: episodes and training, side by side.

The loop must run in 15 minutes on 2 cores, and most of it is the model: measuring the baseline, probing the
synthesized tasks and re-measuring the candidate (episodes through the `hf` agent, one torch thread per Ray
worker) and SFT (forward and backward). To time bigger shapes on exactly the episodes the loop runs, each shape
is the committed checkpoint grown without changing what it computes: the new residual dimensions, heads and MLP
units start at zero (RMSNorm weights and epsilon rescaled so the old dimensions are normalised as before), and
the new layers are identity blocks (zero output projections). So every shape holds the same conversations (up to
float rounding, counted) and pays the cost of its size: what a model of that shape would cost once trained.

- episodes: held-out tasks, trial 0, temperature 0.7, scripted user, serial, one thread (a Ray worker's setting);
- training: forward and backward of one 1,500-token sequence, loss on every position (the machine's threads).

Shapes run alternately within each round, so all see the same machine load. Reported: seconds, ratios to the
default (width 128, 2 layers), and the loop and embedded-build times those ratios project from the default's
stage times (`--episode-minutes`: measure, curate's probes and re-measure; `--train-minutes`: SFT;
`--other-minutes`: the rest; `--build-minutes`).

    python bench/embedded/bench_model_size_cost.py [--tasks 24] [--rounds 2]
        [--results bench/results/model_size_cost.json]
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

import torch
from machine import torch_machine, write_results
from transformers import LlamaForCausalLM

from pipeline.agents.backends.hf import HFAgent
from pipeline.agents.checkpoint import load_checkpoint, read_meta, save_checkpoint
from pipeline.dataset.io import read_tasks
from pipeline.rollout.runner import run_episode
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ((128, 2), (128, 3), (128, 4), (192, 2), (256, 2), (256, 4))
"""(width, layers); heads keep 32 dimensions each, the MLP keeps its ratio to the width."""


@torch.no_grad()
def grow(model: LlamaForCausalLM, width: int, layers: int) -> LlamaForCausalLM:
    """`model` with a wider residual stream and more layers, computing the same logits (up to rounding)."""
    cfg = model.config
    d, head_dim = cfg.hidden_size, cfg.hidden_size // cfg.num_attention_heads
    old_layers = cfg.num_hidden_layers
    if width < d or layers < old_layers or width % head_dim:
        raise ValueError(f"cannot grow width {d} x {old_layers} layers to width {width} x {layers} layers")
    new_cfg = cfg.__class__.from_dict(
        cfg.to_dict()
        | {
            "hidden_size": width,
            "intermediate_size": cfg.intermediate_size * width // d,
            "num_hidden_layers": layers,
            "num_attention_heads": width // head_dim,
            "num_key_value_heads": width // head_dim,
            "head_dim": head_dim,
            "rms_norm_eps": cfg.rms_norm_eps * d / width,  # mean of squares over `width` dims is d/width of the old
            "layer_types": None,
        }
    )
    big = LlamaForCausalLM(new_cfg)
    for p in big.parameters():
        p.zero_()
    scale = math.sqrt(d / width)

    def put(dst: torch.Tensor, src: torch.Tensor) -> None:
        dst[tuple(slice(0, n) for n in src.shape)] = src

    put(big.model.embed_tokens.weight, model.model.embed_tokens.weight)
    if not cfg.tie_word_embeddings:
        put(big.lm_head.weight, model.lm_head.weight)
    big.model.norm.weight.fill_(1.0)
    put(big.model.norm.weight, model.model.norm.weight * scale)
    for i, layer in enumerate(big.model.layers):
        layer.input_layernorm.weight.fill_(1.0)
        layer.post_attention_layernorm.weight.fill_(1.0)
        if i >= old_layers:
            continue  # zero projections: an identity block
        old = model.model.layers[i]
        put(layer.input_layernorm.weight, old.input_layernorm.weight * scale)
        put(layer.post_attention_layernorm.weight, old.post_attention_layernorm.weight * scale)
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            put(getattr(layer.self_attn, name).weight, getattr(old.self_attn, name).weight)
        for name in ("gate_proj", "up_proj", "down_proj"):
            put(getattr(layer.mlp, name).weight, getattr(old.mlp, name).weight)
    big.generation_config = model.generation_config
    return big.eval()


def episodes_seconds(checkpoint: Path, world, tasks) -> tuple[float, list]:
    agent = HFAgent(checkpoint, temperature=0.7, threads=1)
    started = time.perf_counter()
    trajs = [run_episode(world, t, agent, ScriptedUser(), trial=0, seed=i) for i, t in enumerate(tasks)]
    return time.perf_counter() - started, [[(m.role, m.content) for m in tr.messages] for tr in trajs]


def train_seconds(model: LlamaForCausalLM, threads: int, seed: int) -> float:
    torch.set_num_threads(threads)
    ids = torch.randint(model.config.vocab_size, (1, 1500), generator=torch.Generator().manual_seed(seed))
    model.train()
    started = time.perf_counter()
    model(input_ids=ids, labels=ids).loss.backward()
    model.zero_grad(set_to_none=True)
    model.eval()
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", type=Path, default=ROOT / "models" / "embedded")
    ap.add_argument("--world", default="gen-101")
    ap.add_argument("--tasks", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--episode-minutes", type=float, default=8.37, help="default's measure + probes + re-measure")
    ap.add_argument("--train-minutes", type=float, default=4.33, help="default's SFT (8 epochs)")
    ap.add_argument("--other-minutes", type=float, default=0.72, help="target, synthesize, gate, report, promote")
    ap.add_argument("--build-minutes", type=float, default=56.0, help="default's embedded build")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "model_size_cost.json")
    args = ap.parse_args()
    threads = torch.get_num_threads()
    world = load_world(args.world)
    tasks = read_tasks(ROOT / "data" / "eval" / "tasks.jsonl")[:: max(1, 200 // args.tasks)][: args.tasks]
    base = load_checkpoint(args.checkpoint)
    meta = read_meta(args.checkpoint)
    tmp = tempfile.TemporaryDirectory(prefix="model_size_cost_")
    dirs, models = {}, {}
    for shape in SHAPES:
        models[shape] = big = grow(base.model, *shape)
        shape_fields = {
            "hidden_size": big.config.hidden_size,
            "intermediate_size": big.config.intermediate_size,
            "num_layers": big.config.num_hidden_layers,
            "num_heads": big.config.num_attention_heads,
        }
        shape_meta = meta.model_copy(update={"model": meta.model.model_copy(update=shape_fields)})
        dirs[shape] = save_checkpoint(Path(tmp.name) / f"w{shape[0]}_l{shape[1]}", big, base.tokenizer, shape_meta)
    episode_s: dict[tuple, list[float]] = {s: [] for s in SHAPES}
    train_s: dict[tuple, list[float]] = {s: [] for s in SHAPES}
    convs: dict[tuple, list] = {}
    for r in range(args.rounds):
        for shape in SHAPES:
            seconds, convs[shape] = episodes_seconds(dirs[shape], world, tasks)
            episode_s[shape].append(seconds)
            train_s[shape].append(train_seconds(models[shape], threads, r))
    e0, t0 = statistics.median(episode_s[SHAPES[0]]), statistics.median(train_s[SHAPES[0]])
    rows = {}
    for shape in SHAPES:
        e, t = statistics.median(episode_s[shape]) / e0, statistics.median(train_s[shape]) / t0
        same = sum(a == b for a, b in zip(convs[shape], convs[SHAPES[0]], strict=True))
        rows[f"width {shape[0]}, {shape[1]} layers"] = {
            "parameters": sum(p.numel() for p in models[shape].parameters()),
            "episodes_s": round(statistics.median(episode_s[shape]), 2),
            "train_sequence_s": round(statistics.median(train_s[shape]), 3),
            "episode_ratio": round(e, 2),
            "train_ratio": round(t, 2),
            "same_conversations": f"{same}/{len(tasks)}",
            "projected_loop_minutes": round(args.episode_minutes * e + args.train_minutes * t + args.other_minutes, 1),
            "projected_build_minutes": round(args.build_minutes * t),
        }
        print(shape, rows[f"width {shape[0]}, {shape[1]} layers"])
    write_results(
        args.results,
        {
            "shapes": rows,
            "default_stage_minutes": {
                "episodes": args.episode_minutes,
                "train": args.train_minutes,
                "other": args.other_minutes,
                "build": args.build_minutes,
            },
            "setup": {
                "checkpoint": str(args.checkpoint),
                "tasks": len(tasks),
                "rounds": args.rounds,
                **torch_machine(),
            },
        },
    )
    tmp.cleanup()


if __name__ == "__main__":
    main()
