"""Measure: run an agent on a task set, k trials each, grade every trial, diagnose failures, summarize."""

from pipeline.measure.config import LOOP_INPUTS, MeasureConfig, loop_measure_config, sampled
from pipeline.measure.run import RUN_FILES, measure, trial_record, write_per_task

__all__ = [
    "LOOP_INPUTS",
    "MeasureConfig",
    "RUN_FILES",
    "loop_measure_config",
    "measure",
    "sampled",
    "trial_record",
    "write_per_task",
]
