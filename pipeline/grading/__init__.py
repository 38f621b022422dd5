"""Verdicts: the deterministic grade of a trajectory (state diff, static checks, task checks) plus an optional
judge; failure modes; task files validated against their world."""

from pipeline.grading.grader import grade, verdict_summary
from pipeline.grading.state_diff import diff_states
from pipeline.grading.verdict import ComponentResult, FieldDiff, Verdict

__all__ = ["ComponentResult", "FieldDiff", "Verdict", "diff_states", "grade", "verdict_summary"]
