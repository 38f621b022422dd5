"""The embedded default: a tiny retail agent model the project builds and trains on CPU from nothing it downloads."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.lazy import lazy_exports

if TYPE_CHECKING:
    from pipeline.embedded.build import EmbeddedConfig, build_baseline
    from pipeline.embedded.corpus import run_corpus
    from pipeline.embedded.data import build_data, check_checkpoint

__all__ = ["EmbeddedConfig", "build_baseline", "build_data", "check_checkpoint", "run_corpus"]

_LAZY = {
    "EmbeddedConfig": "pipeline.embedded.build",
    "build_baseline": "pipeline.embedded.build",
    "build_data": "pipeline.embedded.data",
    "check_checkpoint": "pipeline.embedded.data",
    "run_corpus": "pipeline.embedded.corpus",
}
"""Exports imported when first used: their modules need safetensors, scipy, tokenizers, …."""

__getattr__ = lazy_exports(__name__, _LAZY)
