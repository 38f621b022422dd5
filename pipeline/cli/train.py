"""`agentloop train ...`: build the embedded default baseline, SFT, GRPO."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from pipeline.cli.console import console
from pipeline.cli.errors import fail
from pipeline.cli.options import ConfigCommand, config_options

app = typer.Typer(help="Train: the embedded default baseline, SFT and GRPO through TRL.", no_args_is_help=True)
log = logging.getLogger(__name__)


def _check_out(out: Path, **inputs) -> None:
    """Refuse, before any training, a checkpoint folder that is or holds an input or cannot be written."""
    from pipeline.outputs import check_output

    check_output(out, "--out", folder=True, inputs=inputs)


def _inputs(settings: dict[str, Any], *names: str) -> dict[str, Any]:
    """The named input files of a run's settings, by the options that gave them (`--held-out`)."""
    return {f"--{name.replace('_', '-')}": settings[name] for name in names}


def _overrides(config: Path | None) -> dict:
    import yaml

    if config is None:
        return {}
    try:
        data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}  # an empty file: no overrides
    except (yaml.YAMLError, UnicodeDecodeError) as exc:  # not YAML (JSON is YAML), or not text
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        fail(f"{config}: not JSON or YAML ({first})")
    if not isinstance(data, dict):
        fail(f"{config}: expected a mapping of settings")
    return data


SFT_PARAMS_ONLY = (
    "lr_scheduler",
    "warmup_ratio",
    "micro_batch_size",
    "labelled_loss",
    "weight_decay",
    "threads",
    "logging_steps",
)
"""SFTConfig's settings `train sft` has no option for (params.yaml's `train` section sets them)."""

lora_options = config_options(
    "pipeline.train.lora:LoraSpec",
    into="lora_settings",
    fields=("rank", "alpha", "dropout", "save_adapter"),
    names={"rank": ("--lora-rank", "--lora-r"), "alpha": "lora-alpha", "dropout": "lora-dropout"},
    help={"save_adapter": "Also write the LoRA adapter (peft format) to OUT/adapter."},
)
"""The LoRA options `sft` and `grpo` share (with `--lora` and `--lora-targets`)."""


def _lora(enabled: bool, settings: dict[str, Any], targets: str | None) -> dict[str, Any] | None:
    """The LoraSpec settings of the LoRA options (None without --lora: full fine-tuning)."""
    if not enabled:
        return None
    modules = {"target_modules": [t.strip() for t in targets.split(",") if t.strip()]} if targets else {}
    return {**settings, **modules}


@app.command("baseline")
def baseline(
    out: Path = typer.Option(..., help="Checkpoint directory to write."),
    config: Path = typer.Option(None, help="YAML file of EmbeddedConfig settings (unknown keys fail)."),
    seed: int = typer.Option(None, help="Override the build seed."),
) -> None:
    """Build the embedded default on CPU: tokenizer, tiny Llama, copy warm-up, flawed-corpus baseline."""
    from pipeline.embedded import EmbeddedConfig, build_baseline

    _check_out(out, **{"--config": config})
    settings = _overrides(config)
    if seed is not None:
        settings["seed"] = seed
    cfg = EmbeddedConfig.model_validate(settings)
    report = build_baseline(cfg, out)
    console.print(f"baseline → {out} ({report['seconds_total']:.0f} s; {json.dumps(report['seconds'])})")


@app.command("check-embedded")
def check_embedded(
    checkpoint: Path = typer.Option(Path("models/embedded"), help="The checkpoint to check."),
    params: Path = typer.Option(Path("params.yaml"), help="params.yaml whose `embedded` section is the recipe."),
    data: Path = typer.Option(None, help="An embedded_data directory to compare with (default: build it afresh)."),
) -> None:
    """Does the checkpoint still match its recipe? Builds the training data (a minute) and compares it with what the
    checkpoint records: corpus counts, the corpus digest, the tokenizer. Exits 1 and names each difference."""
    import tempfile

    from pipeline.embedded import build_data, check_checkpoint
    from pipeline.loop import load_params

    recipe = load_params(params).embedded_config()
    with tempfile.TemporaryDirectory() as tmp:
        if data is None:
            data = Path(tmp)
            with console.status("building the embedded default's data from the recipe…"):
                build_data(recipe, data)
        problems = check_checkpoint(data, checkpoint)
    if problems:
        for p in problems:
            console.print(f"[red]differs:[/red] {escape(p)}", soft_wrap=True)
        console.print(f"{checkpoint} does not match its recipe: rebuild with `dvc repro -f embedded`")
        raise typer.Exit(1)
    console.print(f"{checkpoint} matches its recipe (corpus counts, digest where recorded, tokenizer)")


@app.command("sft", cls=ConfigCommand)
@config_options(
    "pipeline.train.sft_config:SFTConfig",
    exclude=SFT_PARAMS_ONLY + ("lora",),
    names={"learning_rate": "lr", "gradient_accumulation_steps": ("--gradient-accumulation-steps", "--grad-accum")},
    required=("base", "data"),
    help={"base": "Checkpoint to fine-tune.", "data": "trajectories.jsonl (repeatable)."},
)
@lora_options
def sft(
    *,
    settings: dict[str, Any],
    out: Path = typer.Option(..., help="Checkpoint directory to write."),
    lora: bool = typer.Option(False, help="Train a LoRA adapter (merged into the saved weights)."),
    lora_settings: dict[str, Any],
    lora_targets: str = typer.Option(None, help="Comma-separated module names (default: attention and MLP)."),
) -> None:
    """Supervised fine-tuning through TRL's SFTTrainer on verified trajectories, rendered as the base checkpoint
    renders them (the codec, or an outside model's own chat template); loss on assistant tokens only."""
    from pipeline.train import INPUTS, SFTConfig, run_sft

    _check_out(out, **_inputs(settings, *INPUTS))
    params = SFTConfig.model_validate({**settings, "lora": _lora(lora, lora_settings, lora_targets)})
    result = run_sft(params, out)
    loss = f"loss {result.first_loss:.3f} → {result.last_loss:.3f}, " if result.losses else ""  # every logging_steps
    console.print(
        f"SFT: {result.examples} examples, {result.steps} steps, {loss}mean loss {result.mean_loss:.3f}; wrote {out}"
    )


@app.command("grpo", cls=ConfigCommand)
@config_options(
    "pipeline.train.grpo_config:GRPOConfig",
    exclude=("lora",),
    names={"learning_rate": "lr"},
    help={"base": "Checkpoint to train."},
)
@lora_options
def grpo(
    *,
    settings: dict[str, Any],
    out: Path = typer.Option(..., help="Checkpoint directory to write."),
    lora: bool = typer.Option(False, help="Train a LoRA adapter (merged into the saved weights)."),
    lora_settings: dict[str, Any],
    lora_targets: str = typer.Option(None, help="Comma-separated module names (default: attention and MLP)."),
) -> None:
    """GRPO through TRL's GRPOTrainer; episodes run by our runner with the scripted user; reward = verdict."""
    from pipeline.train import GRPOConfig, run_grpo

    _check_out(out, **_inputs(settings, "base", "tasks", "world", "held_out"))
    params = GRPOConfig.model_validate({**settings, "lora": _lora(lora, lora_settings, lora_targets)})
    result = run_grpo(params, out)
    console.print(
        f"GRPO: {result.steps} steps, mean reward per step {result.rewards}, rollouts {result.stats}; wrote {out}"
    )
