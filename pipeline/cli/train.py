"""`agentloop train ...`: build the embedded default baseline, SFT, GRPO."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import typer
from rich.markup import escape

from pipeline.cli.console import console
from pipeline.cli.errors import fail

app = typer.Typer(help="Train: the embedded default baseline, SFT and GRPO through TRL.", no_args_is_help=True)
log = logging.getLogger(__name__)


def _check_out(out: Path, **inputs) -> None:
    """Refuse, before any training, a checkpoint folder that is or holds an input or cannot be written."""
    from pipeline.outputs import check_output

    check_output(out, "--out", folder=True, inputs=inputs)


def _overrides(config: Path | None) -> dict:
    import yaml

    if config is None:
        return {}
    data = yaml.safe_load(config.read_text()) or {}
    if not isinstance(data, dict):
        fail(f"{config}: expected a mapping of settings")
    return data


def _lora(enabled: bool, rank: int, alpha: int, dropout: float, targets: str | None, save_adapter: bool):
    """The LoraSpec of the options `sft` and `grpo` share (None without --lora: full fine-tuning)."""
    from pipeline.train.lora import LoraSpec

    if not enabled:
        return None
    modules = {"target_modules": [t.strip() for t in targets.split(",") if t.strip()]} if targets else {}
    return LoraSpec(rank=rank, alpha=alpha, dropout=dropout, save_adapter=save_adapter, **modules)


@app.command("baseline")
def baseline(
    out: Path = typer.Option(..., help="Checkpoint directory to write."),
    config: Path = typer.Option(None, help="YAML file of EmbeddedConfig settings (unknown keys fail)."),
    seed: int = typer.Option(None, help="Override the build seed."),
) -> None:
    """Build the embedded default on CPU: tokenizer, tiny Llama, copy warm-up, flawed-corpus baseline."""
    from pipeline.embedded.build import EmbeddedConfig, build_baseline

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

    from pipeline.embedded.data import build_data, check_checkpoint
    from pipeline.loop.params import load_params

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


@app.command("sft")
def sft(
    base: Path = typer.Option(..., help="Checkpoint to fine-tune."),
    data: list[Path] = typer.Option(..., help="trajectories.jsonl (repeatable)."),
    out: Path = typer.Option(..., help="Checkpoint directory to write."),
    anchors: list[Path] = typer.Option([], help="Anchor trajectories.jsonl replayed against forgetting (repeatable)."),
    anchor_share: float = typer.Option(0.3, help="Share of training examples drawn from the anchors."),
    tasks: list[Path] = typer.Option([], help="tasks.jsonl used to re-grade the trajectories (repeatable)."),
    held_out: list[Path] = typer.Option(
        [], help="Held-out tasks.jsonl: refuse data, anchors or tasks about one of its customers (repeatable)."
    ),
    epochs: float = typer.Option(8.0),
    lr: float = typer.Option(1e-3, help="Learning rate."),
    batch_size: int = typer.Option(4),
    gradient_accumulation_steps: int = typer.Option(
        1, "--gradient-accumulation-steps", "--grad-accum", help="Batches accumulated per optimizer step."
    ),
    max_length: int = typer.Option(2048, help="Longest example in tokens."),
    overlong: str = typer.Option(
        "auto", help="Longer examples: drop | truncate | auto (truncate for the codec, drop for a chat template)."
    ),
    max_steps: int = typer.Option(-1),
    lora: bool = typer.Option(False, help="Train a LoRA adapter (merged into the saved weights)."),
    lora_rank: int = typer.Option(16, "--lora-rank", "--lora-r", help="LoRA adapter rank."),
    lora_alpha: int = typer.Option(32),
    lora_dropout: float = typer.Option(0.0),
    lora_targets: str = typer.Option(None, help="Comma-separated module names (default: attention and MLP)."),
    save_adapter: bool = typer.Option(False, help="Also write the LoRA adapter (peft format) to OUT/adapter."),
    bf16: bool = typer.Option(False, help="bf16 mixed precision (GPU)."),
    seed: int = typer.Option(0),
) -> None:
    """Supervised fine-tuning through TRL's SFTTrainer on verified trajectories, rendered as the base checkpoint
    renders them (the codec, or an outside model's own chat template); loss on assistant tokens only."""
    from pipeline.train.sft import run_sft
    from pipeline.train.sft_config import SFTConfig

    _check_out(out, **{"--base": base, "--data": data, "--anchors": anchors, "--tasks": tasks, "--held-out": held_out})
    params = SFTConfig(
        base=base,
        data=data,
        anchors=anchors,
        anchor_share=anchor_share,
        tasks=tasks,
        held_out=held_out,
        epochs=epochs,
        learning_rate=lr,
        batch_size=batch_size,
        gradient_accumulation_steps=gradient_accumulation_steps,
        max_length=max_length,
        overlong=overlong,
        max_steps=max_steps,
        bf16=bf16,
        seed=seed,
        lora=_lora(lora, lora_rank, lora_alpha, lora_dropout, lora_targets, save_adapter),
    )
    result = run_sft(params, out)
    loss = f"loss {result.first_loss:.3f} → {result.last_loss:.3f}, " if result.losses else ""  # every logging_steps
    console.print(
        f"SFT: {result.examples} examples, {result.steps} steps, {loss}mean loss {result.mean_loss:.3f}; wrote {out}"
    )


@app.command("grpo")
def grpo(
    base: Path = typer.Option(..., help="Checkpoint to train."),
    tasks: list[Path] = typer.Option(..., help="tasks.jsonl task pool (repeatable)."),
    out: Path = typer.Option(..., help="Checkpoint directory to write."),
    world: str = typer.Option(None, help="World reference (default: the tasks' own)."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from the world)."),
    held_out: list[Path] = typer.Option(
        [], help="Held-out tasks.jsonl: refuse pool tasks about one of its customers (repeatable)."
    ),
    steps: int = typer.Option(3, help="Optimizer steps."),
    max_minutes: float = typer.Option(
        None, help="Wall-clock budget: stop before a step that would end past it (the checkpoint is saved)."
    ),
    num_generations: int = typer.Option(4, help="Episodes per task (the group)."),
    tasks_per_step: int = typer.Option(2, help="Groups per optimizer step."),
    lr: float = typer.Option(1e-4, help="Learning rate."),
    beta: float = typer.Option(0.0, help="KL coefficient (0: no reference model)."),
    loss_type: str = typer.Option("dapo", help="TRL's loss (dapo normalises by the active tokens of the batch)."),
    temperature: float = typer.Option(1.0, help="Sampling temperature of the episodes."),
    max_new_tokens: int = typer.Option(256, help="Tokens per assistant turn."),
    max_prompt_length: int = typer.Option(None, help="Longest first prompt; tasks over it are set aside."),
    max_resamples: int = typer.Option(4, help="Zero-variance groups replaced by another task's, per group."),
    max_infra_retries: int = typer.Option(2, help="Retries of an episode lost to an infrastructure error."),
    max_turns: int = typer.Option(40, help="Assistant + customer messages per episode."),
    max_tool_calls: int = typer.Option(20, help="Tool calls per episode."),
    max_steps_per_turn: int = typer.Option(12, help="Tool calls in a row before the agent must speak."),
    lora: bool = typer.Option(False, help="Train a LoRA adapter (merged into the saved weights)."),
    lora_rank: int = typer.Option(16, "--lora-rank", "--lora-r", help="LoRA adapter rank."),
    lora_alpha: int = typer.Option(32),
    lora_dropout: float = typer.Option(0.0),
    lora_targets: str = typer.Option(None, help="Comma-separated module names (default: attention and MLP)."),
    save_adapter: bool = typer.Option(False, help="Also write the LoRA adapter (peft format) to OUT/adapter."),
    vllm: str = typer.Option("off", help="off | colocate | server (GPU)."),
    vllm_gpu_memory: float = typer.Option(0.3, help="colocate: share of GPU memory for vLLM."),
    vllm_host: str = typer.Option("127.0.0.1", help="server: host of `trl vllm-serve`."),
    vllm_port: int = typer.Option(8000, help="server: port of `trl vllm-serve`."),
    bf16: bool = typer.Option(False, help="bf16 (GPU)."),
    threads: int = typer.Option(2, help="torch CPU threads."),
    seed: int = typer.Option(0),
) -> None:
    """GRPO through TRL's GRPOTrainer; episodes run by our runner with the scripted user; reward = verdict."""
    from pipeline.rollout.runner import Limits
    from pipeline.train.grpo import run_grpo
    from pipeline.train.grpo_config import GRPOConfig

    _check_out(out, **{"--base": base, "--tasks": tasks, "--world": world, "--held-out": held_out})
    params = GRPOConfig(
        base=base,
        tasks=tasks,
        world=world,
        domain=domain,
        held_out=held_out,
        steps=steps,
        max_minutes=max_minutes,
        num_generations=num_generations,
        tasks_per_step=tasks_per_step,
        learning_rate=lr,
        beta=beta,
        loss_type=loss_type,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        max_prompt_length=max_prompt_length,
        max_resamples=max_resamples,
        max_infra_retries=max_infra_retries,
        limits=Limits(max_turns=max_turns, max_tool_calls=max_tool_calls, max_steps_per_turn=max_steps_per_turn),
        lora=_lora(lora, lora_rank, lora_alpha, lora_dropout, lora_targets, save_adapter),
        vllm=vllm,
        vllm_gpu_memory=vllm_gpu_memory,
        vllm_host=vllm_host,
        vllm_port=vllm_port,
        bf16=bf16,
        threads=threads,
        seed=seed,
    )
    result = run_grpo(params, out)
    console.print(
        f"GRPO: {result.steps} steps, mean reward per step {result.rewards}, rollouts {result.stats}; wrote {out}"
    )
