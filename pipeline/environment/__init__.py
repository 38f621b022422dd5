"""An environment: one domain's worlds behind the functions the loop reaches them through (`memory`: the built-in
in-memory worlds, graded by the loop's grader)."""

from pipeline.environment.memory import Environment

__all__ = ["Environment"]
