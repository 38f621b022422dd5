"""Measure: run an agent on a task set, k trials each, grade every trial, diagnose failures, summarize."""

from pipeline.measure.run import MeasureConfig, measure

__all__ = ["MeasureConfig", "measure"]
