"""How exactly the planted copy circuit copies an id before any training, for a few circuit shapes.

The embedded default copies ids with a planted induction head (`pipeline.embedded.copy_circuit`) whose match key is
the last `offsets` tokens. An id case is a listing of ten `item <10-digit id> | price ...` lines and then
`I will use item ` plus the first three digits of one of them; it passes when greedy decoding writes the other
seven digits. `random` ids are uniform; `run of 4` ids hold four equal digits in a row (`0877779...`), which a
three-token key cannot follow (`7 7 7` occurs twice). A word case lists ten customers of the evaluation world
(`email: ... | zip ...` or `user_id: ...`), then `My email is` plus the first three tokens of one; it passes
when the rest comes out token for token. Untrained weights outside the circuit add noise, so the numbers are a
floor for what training starts from, not what a trained model does.

    python bench/embedded/bench_copy_circuit.py [--cases 100] [--results bench/results/copy_circuit.json]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import torch
from machine import torch_machine, write_results
from transformers import AutoTokenizer

from pipeline.agents.checkpoint import ModelConfig
from pipeline.embedded.copy_circuit import COPY_ROPE, plant_copy_circuit
from pipeline.embedded.model import build_model
from pipeline.world.registry import load_world

ROOT = Path(__file__).resolve().parents[2]
SHAPES = [  # (hidden, heads, offsets, code): the default 3-token key, wider, and 4-token keys (a head per offset)
    (128, 4, 3, 8),
    (160, 5, 3, 8),
    (160, 5, 4, 6),
    (128, 4, 4, 6),  # the default's shape with a 4-token key (the four-token rebuild, not kept)
]


def id_cases(tok, n: int, run: bool, seed: int) -> list[tuple[list[int], list[int]]]:
    """Ten `item <id>` lines, then `I will use item ` and one id's first three digits → its other seven."""
    rng = random.Random(seed)

    def an_id(with_run: bool) -> str:
        digits = [rng.choice("0123456789") for _ in range(10)]
        if with_run:
            i = rng.randrange(1, 6)
            digits[i : i + 4] = [rng.choice("0123456789")] * 4
        return "".join(digits)

    cases = []
    for _ in range(n):
        target = an_id(run)
        lines = [f"item {an_id(False)} | price {rng.randint(10, 999)}.{rng.randint(10, 99)}" for _ in range(9)]
        lines.insert(rng.randrange(10), f"item {target} | price 12.34")
        prompt = "\n".join(lines) + f"\nI will use item {target[:3]}"
        cases.append((tok(prompt)["input_ids"], tok(target[3:])["input_ids"]))
    return cases


def word_cases(tok, field: str, n: int, seed: int) -> list[tuple[list[int], list[int]]]:
    """Ten customers' `field` lines, then `My <field> is` and one value's first three tokens → its other tokens."""
    rng = random.Random(seed)
    users = list(load_world("gen-101").db.users.values())
    cases = []
    for _ in range(n):
        chosen = rng.sample(users, 10)
        target = getattr(chosen[0], field)
        rng.shuffle(chosen)
        lines = [f"{field}: {getattr(u, field)} | zip {u.address.zip}" for u in chosen]
        value = tok(" " + target)["input_ids"]
        cases.append((tok("\n".join(lines) + f"\nMy {field} is")["input_ids"] + value[:3], value[3:]))
    return cases


@torch.no_grad()
def exact_copies(model, cases) -> float:
    ok = 0
    for prompt, rest in cases:
        ids = torch.tensor([prompt])
        out = model.generate(ids, max_new_tokens=len(rest), do_sample=False)
        ok += out[0, ids.shape[1] :].tolist() == rest
    return round(ok / len(cases), 4)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", type=Path, default=ROOT / "models" / "embedded")
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "copy_circuit.json")
    args = ap.parse_args()
    torch.set_num_threads(1)
    tok = AutoTokenizer.from_pretrained(args.tokenizer)
    cases = {
        "random id": id_cases(tok, args.cases, False, seed=0),
        "id with a run of 4": id_cases(tok, args.cases, True, seed=1),
        "email": word_cases(tok, "email", args.cases, seed=2),
        "user_id": word_cases(tok, "user_id", args.cases, seed=3),
    }
    rows = []
    for hidden, heads, offsets, code in SHAPES:
        config = ModelConfig(hidden_size=hidden, num_heads=heads, max_position_embeddings=8192, rope_scaling=COPY_ROPE)
        model = build_model(config, tok)
        with torch.no_grad():
            plant_copy_circuit(model, tok, offsets=offsets, code=code)
        model.eval()
        t = time.perf_counter()
        row = {"hidden": hidden, "heads": heads, "offsets": offsets, "code": code}
        row.update({name: exact_copies(model, cs) for name, cs in cases.items()})
        row["seconds"] = round(time.perf_counter() - t, 1)
        rows.append(row)
        print(row, flush=True)
    write_results(args.results, {"cases_per_kind": args.cases, "shapes": rows, "machine": torch_machine()})


if __name__ == "__main__":
    main()
