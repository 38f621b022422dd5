"""The promotion gate: does the candidate beat the champion on the frozen held-out tasks, without regressions?

`decide` re-grades two measure runs from their trajectories and applies `evaluate`, the decision rule on
outcome tables that the power simulation (bench/bench_gate_power.py) also runs.
"""

from pipeline.gate.config import EVAL_TASKS, PASS_AT_1, TRACKABLE, GateConfig
from pipeline.gate.decision import GateDecision, GateInputs, decide, read_gate, write_gate
from pipeline.gate.errors import GateInputError
from pipeline.gate.load import RunInputs, load_run
from pipeline.gate.power import OUTCOMES, Outcome
from pipeline.gate.stats import Evaluation, MetricTest, PassHatK, TaskOutcome, evaluate, holm, sign_flip_pvalue

__all__ = [
    "EVAL_TASKS",
    "OUTCOMES",
    "PASS_AT_1",
    "TRACKABLE",
    "Evaluation",
    "GateConfig",
    "GateDecision",
    "GateInputError",
    "GateInputs",
    "MetricTest",
    "Outcome",
    "PassHatK",
    "RunInputs",
    "TaskOutcome",
    "decide",
    "evaluate",
    "holm",
    "load_run",
    "read_gate",
    "sign_flip_pvalue",
    "write_gate",
]
