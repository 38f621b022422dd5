"""Next tokens for many episodes at once, each drawn from its own random stream exactly as `pick` draws it.

`torch.multinomial(probs, 1, generator=g)` is, on CPU, `argmax(probs / q)` with `q` a fresh tensor of
exponential noise from `g` (the Gumbel trick; ATen's fast path for one sample). So the softmax, the division
and the argmax can run on all rows together while each row's noise still comes from its own generator, in its
own order: the token and the state each stream is left in are those of one `pick` per episode, whichever other
episodes share the batch. `exact()` checks that identity on this torch build once; where it fails (another
build, another algorithm) and for top-p below 1, every row goes through `pick` itself.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

import torch

log = logging.getLogger(__name__)


def pick(logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator | None) -> int:
    """The next token from one position's logits: argmax at temperature 0, else a draw from `generator`."""
    if temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits / temperature, dim=-1).cpu()
    if top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_p, 0) - sorted_p < top_p
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_p[keep])
    return int(torch.multinomial(probs, 1, generator=generator))


@functools.cache
def exact() -> bool:
    """Whether the batched draw gives `torch.multinomial`'s tokens and leaves the streams where it does."""
    vocab, rows = 257, 6
    logits = torch.randn(rows, vocab, generator=torch.Generator().manual_seed(0)) * 4
    alone = [torch.Generator().manual_seed(s) for s in range(rows)]
    together = [torch.Generator().manual_seed(s) for s in range(rows)]
    for _ in range(3):
        want = [pick(row, 0.7, 1.0, g) for row, g in zip(logits, alone, strict=True)]
        if _draw(logits, 0.7, together) != want:
            log.warning("batched sampling differs from torch.multinomial on this build; drawing row by row")
            return False
    return all(torch.equal(a.get_state(), b.get_state()) for a, b in zip(alone, together, strict=True))


def _draw(logits: torch.Tensor, temperature: float, generators: Sequence[torch.Generator | None]) -> list[int]:
    probs = torch.softmax(logits / temperature, dim=-1)
    noise = torch.empty_like(probs)
    for row, g in zip(noise, generators, strict=True):
        row.exponential_(generator=g)
    return torch.argmax(probs / noise, dim=-1).tolist()


def pick_rows(
    logits: torch.Tensor, temperature: float, top_p: float, generators: list[torch.Generator | None]
) -> list[int]:
    """One token per row of `logits` (rows, vocab), row i drawn from `generators[i]`: `pick` for each row."""
    if temperature <= 0:
        return torch.argmax(logits, dim=-1).tolist()
    if top_p >= 1.0 and None not in generators and exact():
        return _draw(logits, temperature, generators)
    return [pick(row, temperature, top_p, g) for row, g in zip(logits, generators, strict=True)]
