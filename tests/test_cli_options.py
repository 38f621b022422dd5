"""Options generated from config classes (`pipeline.cli.options`): the generator's types, names, defaults, bounds
and help, and every converted command's options against its config classes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import click
import pytest
import typer
import typer.main
from pydantic import BaseModel, Field
from pydantic_core import PydanticUndefined
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.cli.options import ConfigCommand, config_options

runner = CliRunner()


class Inner(BaseModel):
    depth: int = Field(default=1, ge=1, description="How deep.")
    width: int = Field(default=2, description="How wide.")


class Toy(BaseModel):
    count: int = Field(default=3, ge=1, le=9, description="How many.")
    share: float = Field(default=0.5, gt=0, le=1, description="A share.")
    name: str | None = Field(default=None, description="A name.")
    where: Path | None = None
    files: list[Path] = Field(default_factory=list, description="Files (repeatable).")
    mode: Literal["fast", "slow"] = Field(default="fast", description="How.")
    flag: bool = Field(default=False, description="A switch.")
    learning_rate: float = Field(default=1e-3, gt=0)
    address: str | None = None
    inner: Inner = Field(default_factory=lambda: Inner(depth=5))
    table: dict[str, float] = Field(default_factory=dict)


TOY = f"{__name__}:Toy"
seen: list[Any] = []


def toy_app(**options: Any) -> typer.Typer:
    """A one-command app whose command validates Toy from its generated options and keeps it in `seen`."""
    options = {"exclude": ("table",), **options}
    toy = typer.Typer(add_completion=False)

    @toy.command(cls=ConfigCommand)
    @config_options(TOY, **options)
    def run(*, out: Path = typer.Option(Path("o"), help="Written by hand."), settings: dict[str, Any]) -> None:
        seen.append((out, Toy.model_validate(settings)))

    return toy


def params(toy: typer.Typer) -> dict[str, Any]:
    return {p.name: p for p in typer.main.get_command(toy).params}


def invoke(toy: typer.Typer, *args: str) -> Any:
    seen.clear()
    result = runner.invoke(toy, list(args))
    assert result.exit_code == 0, result.output
    return seen[-1]


def test_each_field_is_an_option_of_its_type_default_bounds_and_help():
    p = params(toy_app(names={"learning_rate": "lr", "address": ("--address", "--at")}))
    assert " ".join(p) == "out count share name where files mode flag lr address depth width"
    assert (p["count"].default, p["count"].min, p["count"].max, p["count"].help) == (3, 1, 9, "How many.")
    assert p["share"].min is None and p["share"].max == 1  # a float's open bound (gt) is the config's to check
    assert p["name"].default is None and p["where"].type_descriptor.annotation is Path
    assert p["files"].multiple and p["files"].default == []
    assert p["mode"].type_descriptor.annotation == Literal["fast", "slow"]
    assert p["flag"].is_flag and p["flag"].opts == ["--flag"] and p["flag"].secondary_opts == ["--no-flag"]
    assert p["lr"].opts == ["--lr"] and p["lr"].default == 1e-3 and p["lr"].help is None
    assert p["address"].opts == ["--address", "--at"]
    assert p["depth"].default == 5  # a nested field defaults as its parent's default holds it, not its class's 1


def test_values_arrive_as_one_mapping_that_validates_the_config():
    toy = toy_app(names={"learning_rate": "lr"})
    out, toy_config = invoke(toy)
    assert toy_config == Toy() and out == Path("o")
    args = ["--count", "4", "--name", "x", "--files", "a", "--files", "b", "--mode", "slow", "--flag", "--lr", "0.1"]
    _, toy_config = invoke(toy, *args, "--depth", "7", "--out", "p")
    assert toy_config == Toy(
        count=4, name="x", files=[Path("a"), Path("b")], mode="slow", flag=True, learning_rate=0.1, inner=Inner(depth=7)
    )


@pytest.mark.parametrize(
    ("args", "option"),
    [(["--count", "0"], "--count"), (["--count", "x"], "--count"), (["--mode", "medium"], "--mode")],
)
def test_a_bad_value_is_a_usage_error_naming_the_option(args, option):
    result = runner.invoke(toy_app(), args)
    assert result.exit_code == 2 and option in click.unstyle(result.output), result.output


def test_a_bound_the_option_cannot_hold_is_the_configs_to_refuse():
    result = runner.invoke(toy_app(), ["--share", "0"])
    assert result.exit_code == 1 and "share" in str(result.exception)  # the command's ValidationError


def test_fields_exclude_and_required_choose_the_options():
    p = params(toy_app(fields=("mode", "count", "inner.width"), required=("mode",)))
    assert list(p) == ["out", "mode", "count", "width"] and p["mode"].required and not p["count"].required
    p = params(toy_app(exclude=("table", "inner", "flag", "files")))
    assert "flag" not in p and "files" not in p and "depth" not in p and "count" in p


def test_a_field_without_a_command_line_form_must_be_left_out():
    with pytest.raises(TypeError, match=r"Toy\.table"):
        params(toy_app(exclude=()))


def test_an_option_written_by_hand_and_generated_is_refused():
    with pytest.raises(TypeError, match="out.* declared twice"):
        params(toy_app(names={"name": "out"}))


def test_the_help_of_a_field_is_its_description_unless_the_command_says_better():
    p = params(toy_app(help={"count": "Tasks per batch."}))
    assert p["count"].help == "Tasks per batch." and p["name"].help == "A name."


# the converted commands


def commands(group: Any = None, path: str = "") -> dict[str, ConfigCommand]:
    """Every command of `agentloop` whose options come (partly) from config classes."""
    group = group or typer.main.get_command(app)
    out = {}
    for name, command in getattr(group, "commands", {}).items():
        if isinstance(command, ConfigCommand):
            out[f"{path}{name}"] = command
        out |= commands(command, f"{path}{name} ")
    return out


CONVERTED = ["measure", "curate", "synthesize", "gate", "train sft", "train grpo"]
BY_HAND = {"lora"}  # `--lora` turns LoRA on: the flag stands for SFTConfig.lora / GRPOConfig.lora being set


def test_the_converted_commands_are_the_ones_expected():
    assert sorted(commands()) == sorted(CONVERTED)


def config_default(model: Any, path: tuple[str, ...]) -> Any:
    """The default a config gives the field at `path` (a nested one's from its parent's default, if it has one)."""
    value = model.model_fields[path[0]].get_default(call_default_factory=True)
    for name in path[1:]:
        nested = model.model_fields[path[0]].annotation
        value = getattr(value, name) if value is not None else nested.model_fields[name].get_default()
    return value


@pytest.mark.parametrize("name", CONVERTED)
def test_every_field_a_command_exposes_is_an_option_with_the_configs_default(name):
    command = commands()[name]
    options = {p.name: p for p in command.params}
    models = {s.into: s for s in command.sources}
    checked = 0
    for option, (into, path) in command.fields().items():
        source = models[into]
        model = source.config_class()
        default = config_default(model, path)
        param = options[option]
        dotted = ".".join(path)
        if default is PydanticUndefined or dotted in source.required:
            assert param.required, f"{name} --{option}: {dotted} has no default to give"
        else:
            assert not param.required and param.default == default, (name, option, param.default, default)
        field = model.model_fields[path[0]]
        if len(path) == 1:
            assert param.help == source.help.get(dotted, field.description), (name, option)
        checked += 1
    assert checked >= 2


@pytest.mark.parametrize("name", CONVERTED)
def test_no_option_of_a_converted_command_copies_a_config_field_by_hand(name):
    command = commands()[name]
    generated = command.fields()
    fields = set()
    for source in command.sources:
        fields |= set(source.config_class().model_fields)
    by_hand = {p.name for p in command.params if p.name not in generated} & fields
    assert by_hand <= BY_HAND, f"{name}: options {sorted(by_hand - BY_HAND)} repeat config fields by hand"


def test_the_command_tree_is_built_without_importing_a_config_class():
    import subprocess
    import sys

    code = (
        "import sys, typer.main\nfrom pipeline.cli import app\ntyper.main.get_command(app)\n"
        "print(sorted(m for m in ('pydantic', 'pipeline.measure', 'pipeline.train.sft_config') if m in sys.modules))"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root).stdout
    assert out.strip() == "[]"
