"""Can a checkpoint learn to pick a product variant's item id by its options? A probe of the one skill that
exchanges and item modifications need and the embedded default never gets right (0 of 24 held-out tasks).

Each example is what the agent sees and writes at that point: a product's `get_product_details` result
rendered by the codec (`compact_tool_result`: one `(options) item <id> | ...` line per variant), then the
confirmation's `-> (wanted options) item ` — and the target is the id of the variant with those options.
The probe fine-tunes on examples from the training world's products (loss on the id only) and reports greedy
exact-match accuracy on the evaluation world's products every `--eval-every` steps, against chance (1 / the
number of variants). `--extra-layers N` inserts N copies of the last decoder layer, initialised to pass the
residual stream through unchanged, to ask whether depth is what is missing.

    python bench/embedded/bench_variant_lookup.py [--checkpoint models/candidate/checkpoint] [--steps 1200]
        [--extra-layers 0] [--lr 1e-3] [--results bench/results/variant_lookup.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import time
from pathlib import Path

import torch
from machine import torch_machine, write_results
from transformers import AutoModelForCausalLM, AutoTokenizer

from pipeline.formats.codec import compact_tool_result
from pipeline.world.registry import load_world

ROOT = Path(__file__).resolve().parents[2]


def examples(world: str, n: int, seed: int) -> list[tuple[str, str, int]]:
    """(prompt, the wanted variant's item id, variants listed) for `n` random variants of `world`'s products."""
    rng = random.Random(seed)
    products = [p for p in load_world(world).db.products.values() if len(p.variants) > 1]
    out = []
    for _ in range(n):
        product = rng.choice(products)
        variant = rng.choice(list(product.variants.values()))
        options = ", ".join(f"{k} {v}" for k, v in variant.options.items())
        listing = compact_tool_result(json.dumps(product.model_dump()))
        out.append((f"{listing}\n-> ({options}) item ", variant.item_id, len(product.variants)))
    return out


def deepen(model, extra: int) -> None:
    """Insert `extra` copies of the last layer before it, with zeroed output projections (an identity block)."""
    layers = model.model.layers
    for _ in range(extra):
        block = copy.deepcopy(layers[-1])
        torch.nn.init.zeros_(block.self_attn.o_proj.weight)
        torch.nn.init.zeros_(block.mlp.down_proj.weight)
        layers.insert(len(layers) - 1, block)
    for i, layer in enumerate(layers):
        layer.self_attn.layer_idx = i
    model.config.num_hidden_layers = len(layers)
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = [model.config.layer_types[0]] * len(layers)


@torch.no_grad()
def accuracy(model, tok, test) -> dict:
    model.eval()
    exact = first = 0
    for prompt, item_id, _ in test:
        ids = tok(prompt, return_tensors="pt")["input_ids"]
        out = model.generate(ids, max_new_tokens=len(item_id), do_sample=False)
        got = tok.decode(out[0, ids.shape[1] :]).replace(" ", "")
        exact += got.startswith(item_id)
        first += got[:1] == item_id[:1]
    model.train()
    return {"exact": round(exact / len(test), 4), "first_digit": round(first / len(test), 4)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", type=Path, default=ROOT / "models" / "candidate" / "checkpoint")
    ap.add_argument("--train-world", default="gen-7")
    ap.add_argument("--eval-world", default="gen-101")
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--eval-every", type=int, default=400)
    ap.add_argument("--eval-n", type=int, default=150)
    ap.add_argument("--extra-layers", type=int, default=0)
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "variant_lookup.json")
    args = ap.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(args.checkpoint)
    model = AutoModelForCausalLM.from_pretrained(args.checkpoint)
    deepen(model, args.extra_layers)
    train = examples(args.train_world, args.steps * args.batch, seed=0)
    test = examples(args.eval_world, args.eval_n, seed=1)
    curve = [{"step": 0, **accuracy(model, tok, test)}]
    print(curve[-1], flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    t0 = time.perf_counter()
    for step in range(1, args.steps + 1):
        for prompt, item_id, _ in train[(step - 1) * args.batch : step * args.batch]:
            p, a = tok(prompt)["input_ids"], tok(item_id)["input_ids"]
            loss = model(input_ids=torch.tensor([p + a]), labels=torch.tensor([[-100] * len(p) + a])).loss
            (loss / args.batch).backward()
        opt.step()
        opt.zero_grad()
        if step % args.eval_every == 0 or step == args.steps:
            curve.append({"step": step, "train_s": round(time.perf_counter() - t0, 1), **accuracy(model, tok, test)})
            print(curve[-1], flush=True)
    report = {
        "checkpoint": str(
            args.checkpoint.relative_to(ROOT) if args.checkpoint.is_relative_to(ROOT) else args.checkpoint
        ),
        "layers": model.config.num_hidden_layers,
        "extra_layers": args.extra_layers,
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_world": args.train_world,
        "eval_world": args.eval_world,
        "batch": args.batch,
        "lr": args.lr,
        "chance": round(sum(1 / n for *_, n in test) / len(test), 4),
        "mean_variants": round(sum(n for *_, n in test) / len(test), 2),
        "curve": curve,
        "machine": torch_machine(),
    }
    write_results(args.results, report)


if __name__ == "__main__":
    main()
