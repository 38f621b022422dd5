"""Every error agentloop raises on purpose has one root and sits on one boundary's branch."""

from __future__ import annotations

import ast
import builtins
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
    ("pipeline.formats.probe", "_OutOfTime"),
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


VALIDATORS = {"field_validator", "model_validator"}
BUILTINS = {n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)}
BUILTIN_RAISES = {  # (file, function): why a builtin is right there
    **dict.fromkeys(
        [("loop/entry.py", "run_stage"), ("loop/show.py", None), ("loop/next_iteration.py", None)],
        "SystemExit: a script's exit status",
    ),
    **dict.fromkeys(
        [("agents/scripted/flaws.py", "plan_flaws")]
        + [
            ("agents/scripted/script.py", f)
            for f in ("_authenticate", "_handle", "_check_details", "_confirm", "_perform")
        ],
        "NotImplementedError: a hook a subclass writes",
    ),
    **dict.fromkeys(
        [
            ("agents/scripted/flaws.py", "_plantable"),
            ("dataset/task.py", "_printable_id"),
            ("domains/airline/schema.py", "person_name"),
            ("domains/airline/schema.py", "birth_date"),
            ("grading/modes.py", "known_mode"),
            ("loop/params.py", "_refuse_loop_inputs"),
            ("loop/params.py", "train_world"),
        ],
        "ValueError: run by a pydantic validator (an AfterValidator, a field or model validator)",
    ),
    **dict.fromkeys(
        [
            ("formats/compact_template.py", "_value"),
            ("endpoint/client.py", "_parse"),
            ("grading/llm_judge.py", "parse_judgement"),
            ("grading/llm_judge.py", "parse_user_review"),
            ("grading/llm_judge.py", "parse_confirmation"),
            ("trials/resume.py", "load"),
        ],
        "a parser's signal, caught in its module beside json's own ValueError",
    ),
    **dict.fromkeys(
        [
            ("cli/options.py", "_field"),  # a command declared wrongly: its options, its config class
            ("cli/options.py", "_merge"),
            ("cli/options.py", "_model"),
            ("cli/options.py", "cli_type"),
            ("cli/options.py", "decorate"),
            ("curate/bands.py", "betainc"),
            ("curate/bands.py", "masses"),
            ("embedded/copy_circuit.py", "plant_copy_circuit"),
            ("embedded/model.py", "build_model"),
            ("grading/task_checks.py", "evaluate_check"),
            ("serve/connections.py", "bounded_protocol"),
            ("authoring/taxonomy.py", "__init__"),
            ("tracking/tracker.py", "client"),
            ("train/grpo_policy.py", "__init__"),
            ("train/grpo_rollouts.py", "grouped"),
            ("train/grpo_transcript.py", "prompt"),
            ("train/grpo_transcript.py", "sampled"),
            ("world/domain.py", "capability"),
            ("world/tables.py", "tools_of"),
            ("world/vocabulary.py", "__post_init__"),
        ],
        "a developer's bug: a precondition of the code's own callers, or an impossible branch",
    ),
}


def _builtin_raises() -> set[tuple[str, str | None]]:
    found: set[tuple[str, str | None]] = set()

    def visit(node: ast.AST, path: str, function: str | None, validator: bool) -> None:
        for child in ast.iter_child_nodes(node):
            f, v = function, validator
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                names = {getattr(d.func if isinstance(d, ast.Call) else d, "id", None) for d in child.decorator_list}
                f, v = child.name, validator or bool(names & VALIDATORS)
            if isinstance(child, ast.Raise) and child.exc is not None and not v:
                exc = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                # a module's or a class's __getattr__ raises AttributeError: the protocol getattr and hasattr need
                protocol = f == "__getattr__" and isinstance(exc, ast.Name) and exc.id == "AttributeError"
                if isinstance(exc, ast.Name) and exc.id in BUILTINS and not protocol:
                    found.add((path, f))
            visit(child, path, f, v)

    for file in sorted((ROOT / "pipeline").rglob("*.py")):
        visit(ast.parse(file.read_text()), file.relative_to(ROOT / "pipeline").as_posix(), None, False)
    return found


def test_errors_are_typed_where_they_are_raised() -> None:
    """A builtin raised outside a validator is a bug's signal, listed above with why; anything the user can cause
    raises an AgentloopError subclass naming the file, field or option."""
    found = _builtin_raises()
    assert found - set(BUILTIN_RAISES) == set(), "raise an AgentloopError subclass (pipeline/errors.py) instead"
    assert set(BUILTIN_RAISES) - found == set(), "listed but no longer raised: drop it from the list"


def test_no_command_catches_builtin_errors_itself() -> None:
    import pipeline.cli.errors

    assert not hasattr(pipeline.cli.errors, "failing")
    for file in (ROOT / "pipeline" / "cli").glob("*.py"):
        assert "failing(" not in file.read_text(), file
