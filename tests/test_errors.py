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
PRIVATE = {  # signals inside one module, never seen outside it
    ("pipeline.endpoint.client", "_Deadline"),
    ("pipeline.domains.telecom.flawed", "_Transferred"),
}


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


def _app(raise_: BaseException):
    import typer

    from pipeline.cli.errors import AgentloopGroup

    app = typer.Typer(cls=AgentloopGroup)

    @app.command("boom")
    def boom() -> None:
        raise raise_

    @app.command("other")
    def other() -> None: ...

    return app


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (WorldError("the world refuses [this]"), "error: the world refuses [this]"),
        (FileNotFoundError("tasks.jsonl: no such file"), "error: tasks.jsonl: no such file"),
    ],
)
def test_the_cli_turns_agentloop_errors_into_one_line_and_exit_2(error: BaseException, line: str) -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(_app(error), ["boom"])
    assert result.exit_code == 2
    assert result.output.strip() == line
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_validation_error_names_each_field() -> None:
    from pydantic import BaseModel, ConfigDict, ValidationError
    from typer.testing import CliRunner

    class Settings(BaseModel):
        model_config = ConfigDict(extra="forbid")
        k: int

    try:
        Settings.model_validate({"k": "x", "kk": 1})
    except ValidationError as exc:
        error = exc
    result = CliRunner().invoke(_app(error), ["boom"])
    assert result.exit_code == 2
    assert (
        result.output.strip() == "error: k: Input should be a valid integer, unable to parse string as an integer;"
        " kk: Extra inputs are not permitted"
    )


def test_any_other_error_is_a_bug_and_keeps_its_traceback() -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(_app(KeyError("x")), ["boom"])
    assert result.exit_code == 1
    assert isinstance(result.exception, KeyError)


def test_the_command_is_a_package_whose_help_needs_no_heavy_library() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.argv = ['agentloop', '--help']\n"
        "from pipeline.cli import app\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        "heavy = {'torch', 'transformers', 'trl', 'ray', 'mlflow', 'pydantic'} & set(sys.modules)\n"
        "print('HEAVY', sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip().splitlines()[-1] == "HEAVY []"
