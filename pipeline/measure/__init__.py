"""Measure: run an agent on a task set, k trials each, grade every trial, diagnose failures, summarize."""

from pipeline.measure.config import MeasureConfig
from pipeline.measure.run import measure

__all__ = ["MeasureConfig", "measure"]
