"""Verdicts: the deterministic grade of a trajectory (state diff, static checks, task checks) plus an optional
judge; failure modes; task files validated against their world."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.grading.dual_control import PARENT
from pipeline.grading.evidence import EvidencePool
from pipeline.grading.failure_modes import SIGNATURES, FailureAnalysis, analyze
from pipeline.grading.grader import grade, verdict_summary
from pipeline.grading.judge import Judge
from pipeline.grading.modes import BY_NAME, DUAL_CONTROL, LOOP_MODES
from pipeline.grading.state_diff import count_by_kind, diff_states
from pipeline.grading.static_checks import StaticInput, check_authorization, check_policy_violations, check_tool_budget
from pipeline.grading.tau2_criteria import Tau2CriteriaError, apply_criteria, env_assertions, unsupported_criteria
from pipeline.grading.tau2_reward import VERDICTS, Tau2Config, VerdictName, tau2_reward
from pipeline.grading.validate import check_tasks, validate_file
from pipeline.grading.verdict import ComponentResult, FieldDiff, Verdict
from pipeline.lazy import lazy_exports

if TYPE_CHECKING:
    from pipeline.grading.llm_judge import USAGE_NOTE, judge_usage, make_judge

__all__ = [
    "BY_NAME",
    "ComponentResult",
    "DUAL_CONTROL",
    "EvidencePool",
    "FailureAnalysis",
    "FieldDiff",
    "Judge",
    "LOOP_MODES",
    "PARENT",
    "SIGNATURES",
    "StaticInput",
    "Tau2Config",
    "Tau2CriteriaError",
    "USAGE_NOTE",
    "VERDICTS",
    "Verdict",
    "VerdictName",
    "analyze",
    "apply_criteria",
    "check_authorization",
    "check_policy_violations",
    "check_tasks",
    "check_tool_budget",
    "count_by_kind",
    "diff_states",
    "env_assertions",
    "grade",
    "judge_usage",
    "make_judge",
    "tau2_reward",
    "unsupported_criteria",
    "validate_file",
    "verdict_summary",
]

_LAZY = {
    "USAGE_NOTE": "pipeline.grading.llm_judge",
    "judge_usage": "pipeline.grading.llm_judge",
    "make_judge": "pipeline.grading.llm_judge",
}
"""Exports imported when first used: their modules need openai."""

__getattr__ = lazy_exports(__name__, _LAZY)
