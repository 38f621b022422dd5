"""The loop as DVC stages: params sections, stage functions and the paths they share."""

from pipeline.loop.params import load_params

__all__ = ["load_params"]
