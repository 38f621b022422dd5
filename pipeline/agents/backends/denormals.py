"""Subnormal floats flushed to zero on the CPU for a stretch of work (x86 FTZ/DAZ, `torch.set_flush_denormal`).

A trained model's peaked attention puts probabilities below ~1e-38 into its softmax and everything downstream
of it, and each subnormal operand sends the CPU down a slow path. Flushed to zero, the embedded default's SFT
backward took 89 ms instead of 140 on a 2,048-token example, and decoding 80 trials in flight 11.0 s instead of
12.5, with byte-identical checkpoints and trajectories (docs/experiments.md, 2026-12-04): such values are far
below what fp32 sums of probabilities can register. The setting is the calling thread's; it is set back to off
afterwards (torch has no getter, and off is its default).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def flushed_denormals(on: bool = True) -> Iterator[None]:
    """Within the block, subnormals are zero (where the CPU supports it and `on`)."""
    if not on or not torch.set_flush_denormal(True):
        yield
        return
    try:
        yield
    finally:
        torch.set_flush_denormal(False)
