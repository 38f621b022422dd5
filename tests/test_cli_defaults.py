"""A command's options parse into its job's config class, and an option left out means the class's default: the
command and the library run a job the same way unless told otherwise."""

from __future__ import annotations

import pytest
import typer.main
from pydantic_core import PydanticUndefined

from pipeline.cli import app

RENAMED = {"lr": "learning_rate"}
DIFFERENT = {
    # `train grpo` has always capped an episode at 20 tool calls, tighter than the runner's 30 (short GRPO
    # episodes on CPU); kept so the command trains as it did.
    ("train grpo", "max_tool_calls"): (20, 30),
}


def _config_classes():
    from pipeline.curate import CurateConfig
    from pipeline.gate import GateConfig
    from pipeline.measure import MeasureConfig
    from pipeline.train.grpo_config import GRPOConfig
    from pipeline.train.sft_config import SFTConfig

    return {
        "train sft": SFTConfig,
        "train grpo": GRPOConfig,
        "measure": MeasureConfig,
        "curate": CurateConfig,
        "gate": GateConfig,
    }


@pytest.mark.parametrize("command", ["train sft", "train grpo", "measure", "curate", "gate"])
def test_option_defaults_are_the_config_defaults(command: str) -> None:
    from pipeline.rollout.runner import Limits

    cls = _config_classes()[command]
    group = typer.main.get_command(app)
    for part in command.split():
        group = group.commands[part]  # type: ignore[attr-defined]
    checked, differ = 0, []
    for option in group.params:
        name = RENAMED.get(option.name, option.name)
        field = cls.model_fields.get(name) or (Limits.model_fields.get(name) if "limits" in cls.model_fields else None)
        if field is None or name == "lora" or option.required:  # a required option has no default to compare
            continue
        default = field.get_default(call_default_factory=True)
        if default is PydanticUndefined:  # required by the class: the command requires it too, or names a default
            continue
        checked += 1
        if option.default != default and DIFFERENT.get((command, option.name)) != (option.default, default):
            differ.append(f"--{option.name.replace('_', '-')}: option {option.default!r}, {cls.__name__} {default!r}")
    assert checked >= 4
    assert differ == []
