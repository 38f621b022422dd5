"""The copy warm-up: synthetic sequences that make a tiny model learn to copy before it learns the agent.

A 2-layer model learns to repeat an id (order number, email, item id) only after an abrupt "induction" phase;
on the agent's own data that phase can take many minutes, on these sequences it comes within about a minute.
Three kinds of problem, packed into each sequence, loss only on the part that must be copied:

- repeat: a random span of words and digit strings, then the same span again;
- lookup: records shaped like the compact tool results (`item_id 1234567890 | color=blue, size=M | ...`), then
  the options of one record and the id the agent must copy from it;
- call: `key: value` lines (order ids, user ids, emails), then a Hermes tool call whose argument repeats one.
"""

from __future__ import annotations

import json
import random
import string

from pydantic import BaseModel, ConfigDict, Field

from pipeline.embedded.train_loop import Example
from pipeline.formats import TOOL_CALL_CLOSE, TOOL_CALL_OPEN

_WORDS = [
    "blue",
    "red",
    "green",
    "black",
    "white",
    "small",
    "large",
    "medium",
    "cotton",
    "leather",
    "metal",
    "wood",
    "glass",
    "steel",
    "plastic",
    "round",
    "square",
    "pending",
    "delivered",
    "processed",
    "cancelled",
    "shirt",
    "lamp",
    "chair",
    "desk",
    "bottle",
    "watch",
    "speaker",
    "camera",
    "jacket",
    "boots",
    "wireless",
    "portable",
    "digital",
    "analog",
    "gold",
    "silver",
    "ceramic",
    "polyester",
    "nylon",
    "bamboo",
    "electric",
    "manual",
]
_OPTS = ("color", "size", "material", "style", "capacity", "type", "weight", "finish")
_KEYS = ("order_id", "user_id", "item_id", "product_id", "payment_method_id", "email", "zip")
_TOOLS = ("get_order_details", "get_user_details", "get_item_details", "get_product_details", "find_user_id_by_email")


class WarmupConfig(BaseModel):
    """Size of the synthetic copy data."""

    model_config = ConfigDict(extra="forbid")

    sequences: int = Field(default=600, ge=1, description="Number of packed sequences.")
    seq_tokens: int = Field(default=768, ge=64, description="Target tokens per packed sequence.")
    seed: int = Field(default=0, description="Generator seed.")


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


def _value(rng: random.Random, key: str) -> str:
    if key == "order_id":
        return f"#W{_digits(rng, 7)}"
    if key == "user_id":
        return f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}_{_digits(rng, 4)}"
    if key == "email":
        return f"{rng.choice(_WORDS)}.{rng.choice(_WORDS)}{_digits(rng, 4)}@example.com"
    if key == "zip":
        return _digits(rng, 5)
    if key == "payment_method_id":
        return f"{rng.choice(['credit_card', 'paypal', 'gift_card'])}_{_digits(rng, 7)}"
    return _digits(rng, 10)


def _repeat(rng: random.Random) -> tuple[str, str]:
    span = " ".join(
        rng.choice([rng.choice(_WORDS), _digits(rng, rng.randint(3, 10))]) for _ in range(rng.randint(4, 14))
    )
    return f"copy: {span}\nagain:", f" {span}\n"


def _lookup(rng: random.Random) -> tuple[str, str]:
    names = rng.sample(_OPTS, rng.randint(1, 3))
    rows, seen = [], set()
    for _ in range(rng.randint(3, 12)):
        opts = tuple(rng.choice(_WORDS) for _ in names)
        if opts in seen:
            continue
        seen.add(opts)
        cells = ", ".join(f"{n}={v}" for n, v in zip(names, opts, strict=True))
        rows.append((_digits(rng, 10), cells))
    item, cells = rng.choice(rows)
    table = "\n".join(f"item_id {i} | {c} | available | price {rng.randint(5, 900)}.{_digits(rng, 2)}" for i, c in rows)
    return f"{table}\nwant {cells}: item_id", f" {item}\n"


def _call(rng: random.Random) -> tuple[str, str]:
    keys = rng.sample(_KEYS, rng.randint(2, 5))
    values = {k: _value(rng, k) for k in keys}
    key = rng.choice(keys)
    lines = "\n".join(f"{k}: {v}" for k, v in values.items())
    call = json.dumps({"name": rng.choice(_TOOLS), "arguments": {key: values[key]}})
    head, tail = call.split(values[key], 1)
    return f"{lines}\n{TOOL_CALL_OPEN}\n{head}", f"{values[key]}{tail}\n{TOOL_CALL_CLOSE}\n"


def warmup_examples(tokenizer, config: WarmupConfig | None = None) -> list[Example]:
    """Packed synthetic sequences; the mask marks the copied parts."""
    config = config or WarmupConfig()
    rng = random.Random(config.seed)
    makers = (_repeat, _lookup, _call)
    out: list[Example] = []
    for _ in range(config.sequences):
        ids: list[int] = []
        mask: list[float] = []
        while len(ids) < config.seq_tokens:
            prompt, answer = rng.choice(makers)(rng)
            p, a = tokenizer([prompt, answer], add_special_tokens=False)["input_ids"]
            ids += p + a
            mask += [0] * len(p) + [1] * len(a)
        out.append(Example(ids[: config.seq_tokens], mask[: config.seq_tokens]))
    return out
