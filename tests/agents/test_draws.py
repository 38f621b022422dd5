"""Batched sampling draws what `pick` draws, row by row, and leaves every episode's stream where `pick` leaves it."""

from __future__ import annotations

import pytest
import torch

from pipeline.agents.backends.draws import exact, pick, pick_rows


def streams(n: int, base: int) -> list[torch.Generator]:
    return [torch.Generator().manual_seed(base + i) for i in range(n)]


def test_this_torch_build_takes_the_batched_draw():
    assert exact()


@pytest.mark.parametrize("temperature,top_p", [(0.7, 1.0), (1.3, 1.0), (0.7, 0.9), (0.0, 1.0)])
def test_rows_drawn_together_equal_rows_drawn_alone(temperature, top_p):
    rows, vocab = 16, 2048
    alone, together = streams(rows, 100), streams(rows, 100)
    for step in range(40):
        logits = torch.randn(rows, vocab, generator=torch.Generator().manual_seed(step)) * (1 + step % 5)
        want = [pick(row, temperature, top_p, g) for row, g in zip(logits, alone, strict=True)]
        assert pick_rows(logits, temperature, top_p, together) == want
    for a, b in zip(alone, together, strict=True):
        assert torch.equal(a.get_state(), b.get_state())


def test_a_row_draws_the_same_whoever_shares_the_batch():
    vocab = 512
    mine = torch.randn(vocab, generator=torch.Generator().manual_seed(9))
    alone = [pick_rows(mine[None], 0.7, 1.0, streams(1, 5))[0] for _ in range(3)]
    others = torch.randn(7, vocab, generator=torch.Generator().manual_seed(10))
    shared = pick_rows(torch.cat((others[:3], mine[None], others[3:])), 0.7, 1.0, streams(8, 2))
    assert shared[3] == pick(mine, 0.7, 1.0, torch.Generator().manual_seed(5)) == alone[0]
