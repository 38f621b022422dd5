"""Digests of JSON values: the sha256 of their canonical text, so equal values hash alike whatever their key order.

A bottom-layer module (it imports only the standard library). `canonical_json` is the form the world's hashes
(state, fingerprints, checks) are taken over: sorted keys, no whitespace, unicode kept. Older digests (a codec
hash, a trajectory key, a stage digest) were taken over `json.dumps(obj, sort_keys=True)` as it comes, with its
spaces and ASCII escapes: `compact=False, ensure_ascii=True` gives those, byte for byte, so nothing recorded
moves.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

__all__ = ["canonical_json", "json_text", "sha256_json"]


def json_text(
    obj: Any, *, compact: bool = True, ensure_ascii: bool = False, default: Callable[[Any], Any] | None = None
) -> str:
    """`obj` as JSON with sorted keys: without whitespace (`compact`) or with json's default ", " and ": "."""
    separators = (",", ":") if compact else (", ", ": ")
    return json.dumps(obj, sort_keys=True, separators=separators, ensure_ascii=ensure_ascii, default=default)


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the form every hash of world state is taken over."""
    return json_text(obj)


def sha256_json(
    obj: Any, *, compact: bool = True, ensure_ascii: bool = False, default: Callable[[Any], Any] | None = None
) -> str:
    """The sha256 (hex) of `obj`'s JSON text (`json_text`, same options), encoded as UTF-8."""
    text = json_text(obj, compact=compact, ensure_ascii=ensure_ascii, default=default)
    return hashlib.sha256(text.encode()).hexdigest()
