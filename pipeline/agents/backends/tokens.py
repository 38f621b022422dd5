"""Token-id sequences as the decoders compare them: a new prompt against what a key/value cache holds."""

from __future__ import annotations


def common_prefix(a: list[int], b: list[int]) -> int:
    """How many leading ids `a` and `b` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
