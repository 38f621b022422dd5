"""Every error agentloop raises on purpose has one root and sits on one boundary's branch."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from pipeline.errors import (
    AgentloopError,
    InfrastructureError,
    InputError,
    PromptTooLongError,
    TaskError,
    TrackingError,
    TrainingError,
    WorldError,
)

ROOT = Path(__file__).resolve().parents[1]
BOUNDARIES = (InputError, WorldError, TaskError, InfrastructureError, TrainingError, TrackingError)
PRIVATE = {("pipeline.endpoint.client", "_Deadline")}  # a signal inside one function, never seen outside it


def _error_classes() -> list[tuple[str, str]]:
    found = []
    for path in sorted((ROOT / "pipeline").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and (
                node.name.endswith(("Error", "Exception"))
                or any(isinstance(b, ast.Name) and b.id.endswith(("Error", "Exception")) for b in node.bases)
            ):
                found.append((module, node.name))
    return found


CLASSES = _error_classes()


def test_the_scan_finds_the_errors() -> None:
    names = {name for _, name in CLASSES}
    assert {"TaskFileError", "ToolError", "ParamsError", "ExpressionError", "GateInputError"} <= names
    assert len(CLASSES) > 40


@pytest.mark.parametrize(("module", "name"), [c for c in CLASSES if c not in PRIVATE], ids=lambda v: str(v))
def test_every_error_has_the_root_and_one_boundary(module: str, name: str) -> None:
    cls = getattr(importlib.import_module(module), name)
    if not isinstance(cls, type) or not issubclass(cls, BaseException):
        pytest.fail(f"{module}.{name} is named like an error but is not an exception class")
    assert issubclass(cls, AgentloopError), f"{module}.{name} does not derive from AgentloopError"
    if cls not in (AgentloopError, *BOUNDARIES):
        assert sum(issubclass(cls, b) for b in BOUNDARIES) == 1, f"{module}.{name} sits on more than one boundary"


def test_one_prompt_too_long_error() -> None:
    from pipeline.agents.backends import vllm
    from pipeline.serve import engine
    from pipeline.train import grpo_rollouts

    assert (
        vllm.PromptTooLongError is engine.PromptTooLongError is grpo_rollouts.PromptTooLongError is PromptTooLongError
    )
    assert issubclass(PromptTooLongError, ValueError)  # callers that caught the old ValueError still do


def test_errors_keep_their_builtin_bases() -> None:
    from pipeline.dataset.io import TaskFileError
    from pipeline.tau2.data import Tau2DataNotFound
    from pipeline.world.domain import DomainCapabilityError

    assert issubclass(TaskFileError, ValueError)
    assert issubclass(Tau2DataNotFound, FileNotFoundError)
    assert issubclass(DomainCapabilityError, LookupError)
    assert issubclass(InfrastructureError, RuntimeError)
