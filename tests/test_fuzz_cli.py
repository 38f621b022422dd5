"""Property-based fuzzing of the command line, on parsing and validation: for every `agentloop` command, drawn
option values (wrong types, out-of-range numbers, odd strings) and input files (missing, empty, binary, a folder,
truncated JSON / JSONL, JSON of the wrong shape) end in exit 0 or a one-line error with exit code 2, never a
traceback, and a failed command leaves nothing where --out pointed (no output, no `*.tmp`).

Every input file a command reads is a bad one, so no drawn command gets past validation into a whole job; commands
that read no input file (`NO_INPUTS`: world generate, tasks lint...) get drawn option values only, and those that
would load a model or start a server are left out (`SKIP`). Each example stays within parsing and validation.
"""

from __future__ import annotations

import enum
import tempfile
from pathlib import Path
from typing import Literal, get_args, get_origin

import click
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pipeline.cli import app

runner = CliRunner()
ROOT = typer.main.get_command(app)


def _commands(cmd, path=()):
    if hasattr(cmd, "commands"):
        for name, sub in cmd.commands.items():
            yield from _commands(sub, (*path, name))
    else:
        yield path, cmd


COMMANDS = dict(_commands(ROOT))
# Commands left out of drawn options: a valid draw would run a whole job rather than fail validation. train
# baseline trains when its --config is left out; train check-embedded checks the real embedded checkpoint by
# default; env serve serves whatever valid draw it gets; model deploy / rollback move an alias in whichever registry
# the environment names, reading no input. (serve, train sft / grpo always get a bad --model / --base, so they stop
# at it.) All still get --help.
SKIP = {
    ("train", "baseline"),
    ("train", "check-embedded"),
    ("env", "serve"),
    ("model", "deploy"),
    ("model", "rollback"),
}
# Commands that read no input file: drawn option values only (a valid draw runs a short job: a small world, a lint).
NO_INPUTS = {
    ("world", "generate"),
    ("world", "replay"),
    ("tasks", "import-tau2"),
    ("tasks", "lint"),
    ("model", "formats"),
}
FUZZED = sorted(path for path in COMMANDS if path not in SKIP)
# Options (and arguments) that name a file or folder to read: always given a bad one.
INPUTS = {
    "tasks", "config", "metrics", "targets", "pool", "candidate", "champion", "baseline", "data", "base", "run",
    "results", "source", "path", "run_a", "run_b", "verdicts", "anchors", "held_out", "params", "checkpoint",
    "model", "gate", "extra", "edges", "world",
}  # fmt: skip
BAD_FILES = {
    "missing": None,
    "empty": b"",
    "binary": b"\x00\xff\xfe\x80garbage\x01",
    "truncated-json": b'{"a": [1, 2',
    "truncated-jsonl": b'{"id": "t1", "world": "gen-1-2x2x2"}\n{"id": "t2", "wor',
    "json-list": b"[1, 2, 3]",
    "json-number": b"42",
    "json-string": b'"just a string"',
    "json-wrong-shape": b'{"unexpected": {"nested": [null, true]}}',
    "jsonl-wrong-shape": b"[1]\n[2]\n",
    "yaml-garbage": b"a: [1, 2\n  b: }",
    "folder": "folder",
}
odd_values = st.sampled_from(
    ["-1", "0", "1", "nan", "inf", "-inf", "1e999", "1.5", "-0.5", "abc", "", " ", "99999999999999999999", "0x10",
     "true", "none", "gen-1-0x0x0", "gen-x", "hf:", "flawed:seed=nan", ":", "a,b", "../..", "é", "-", "--"]
) | st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\n\r"), max_size=8)  # fmt: skip


def typed_values(param):
    """Values of the option's own type, in range or out of it (click's bounds, the config's validators)."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", str)
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation)
    if get_origin(annotation) is Literal:
        return st.sampled_from([str(c) for c in get_args(annotation)])
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return st.sampled_from([str(c.value) for c in annotation])
    if annotation is int:
        return st.sampled_from([-(2**63), -1, 0, 1, 2, 10**9, 2**64]).map(str) | st.integers(-3, 50).map(str)
    if annotation is float:
        return st.floats(allow_nan=True, allow_infinity=True).map(repr) | st.sampled_from(["0", "1", "-0.0"])
    return odd_values


def _params(cmd):
    with click.Context(cmd, info_name="agentloop") as ctx:
        return [p for p in cmd.get_params(ctx) if p.name != "help"]


def _is_input(param) -> bool:
    return param.name in INPUTS


@st.composite
def invocations(draw):
    path = draw(st.sampled_from(FUZZED))
    params = _params(COMMANDS[path])
    chosen = [p for p in params if p.required or draw(st.integers(0, 3)) == 0]
    assert any(_is_input(p) for p in chosen) or path in NO_INPUTS, path
    plan = []
    for param in chosen:
        if _is_input(param):
            value = ("file", draw(st.sampled_from(sorted(BAD_FILES))))
        elif param.name == "out":
            value = ("out", None)
        elif getattr(param, "is_flag", False):
            value = ("flag", None)
        else:
            value = ("value", draw(typed_values(param) | odd_values))
        plan.append((param, value))
    return path, plan


def _argv(path, plan, root: Path) -> list[str]:
    argv = list(path)
    for i, (param, (kind, value)) in enumerate(plan):
        if kind == "file":
            data = BAD_FILES[value]
            target = root / f"in{i}-{value}.json"
            if data == "folder":
                target.mkdir()
            elif data is not None:
                target.write_bytes(data)
            text = str(target)
        elif kind == "out":
            text = str(root / "out" / "result")
        elif kind == "flag":
            argv.append(param.opts[0])
            continue
        else:
            text = value
        if param.param_type_name == "argument":
            argv.append(text)
        else:
            argv.append(f"{param.opts[0]}={text}")
    return argv


def check(result, root: Path) -> None:
    output = click.unstyle(result.output)
    assert "Traceback" not in output, output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback: the command line let a bug through
    assert result.exit_code in (0, 2), (result.exit_code, output)
    if result.exit_code == 2:
        lines = [line for line in output.split("\n") if line.strip()]  # not splitlines: \x1c-\x1e in a value
        if "Usage:" not in output:  # click's usage error (a box); ours is `error: MESSAGE` on one line
            assert len(lines) == 1 and lines[0].startswith("error: "), output
        out = root / "out"
        assert not out.exists() or not any(out.iterdir()), sorted(out.rglob("*"))
    assert not list(root.rglob("*.tmp")), sorted(root.rglob("*.tmp"))


@settings(max_examples=800, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(invocations())
def test_bad_inputs_and_options_fail_in_one_line(case):
    path, plan = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "out").mkdir()
        argv = _argv(path, plan, root)
        check(runner.invoke(app, argv, catch_exceptions=True), root)


def test_every_command_has_help():
    for path in COMMANDS:
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output, result.exception)
        assert "Traceback" not in result.output
