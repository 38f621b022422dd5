"""The promotion gate: does the candidate beat the champion on the frozen held-out tasks, without regressions?

`decide` re-grades two measure runs from their trajectories and applies `evaluate`, the decision rule on
outcome tables that the power simulation (bench/bench_gate_power.py) also runs.
"""

from pipeline.gate.aa import aa_check, write_aa
from pipeline.gate.config import ACT_PASS_HAT_K, EVAL_TASKS, PASS_AT_1, TRACKABLE, TRACKED, GateConfig
from pipeline.gate.decision import GateDecision, GateInputs, decide, read_gate, write_gate
from pipeline.gate.errors import GateInputError
from pipeline.gate.load import RunInputs, load_run, sha256_file
from pipeline.gate.power import OUTCOMES, Outcome
from pipeline.gate.render import OUTCOME_WORD, decision_table
from pipeline.gate.split import SplitComparison
from pipeline.gate.stats import Evaluation, MetricTest, PassHatK, evaluate, holm, sign_flip_pvalue
from pipeline.gate.table import TaskOutcome

__all__ = [
    "ACT_PASS_HAT_K",
    "EVAL_TASKS",
    "Evaluation",
    "GateConfig",
    "GateDecision",
    "GateInputError",
    "GateInputs",
    "MetricTest",
    "OUTCOMES",
    "OUTCOME_WORD",
    "Outcome",
    "PASS_AT_1",
    "PassHatK",
    "RunInputs",
    "SplitComparison",
    "TRACKABLE",
    "TRACKED",
    "TaskOutcome",
    "aa_check",
    "decide",
    "decision_table",
    "evaluate",
    "holm",
    "load_run",
    "read_gate",
    "sha256_file",
    "sign_flip_pvalue",
    "write_aa",
    "write_gate",
]
