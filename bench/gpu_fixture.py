"""The GPU check's model: a random-weight Qwen2-architecture checkpoint with Qwen2.5's chat template, built offline.

It is the test fixture (`tests/agents/tiny_families.py`) at a width vLLM's attention kernels take (head size 64),
so the same template, tokenizer and format detection are exercised on the GPU as in the CPU tests.

    python bench/gpu_fixture.py --out /tmp/qwen2-tiny [--hidden 256 --layers 2 --heads 4 --kv-heads 2]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="checkpoint directory to write")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--context", type=int, default=16384, help="max_position_embeddings")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.hidden % args.heads or args.heads % args.kv_heads:
        ap.error("--hidden must divide by --heads, and --heads by --kv-heads")
    shape = {
        "hidden_size": args.hidden,
        "intermediate_size": 2 * args.hidden,
        "num_hidden_layers": args.layers,
        "num_attention_heads": args.heads,
        "num_key_value_heads": args.kv_heads,
        "max_position_embeddings": args.context,
    }
    build_checkpoint(FAMILIES["qwen2"], args.out, corpus(), seed=args.seed, shape=shape)
    print(json.dumps({"checkpoint": str(args.out), **shape, "head_dim": args.hidden // args.heads}))


if __name__ == "__main__":
    main()
