"""`agentloop train grpo`: TRL's GRPOTrainer, with our episode runner generating through `rollout_func`.

TRL 1.16's GRPOTrainer accepts a `rollout_func(prompts, trainer)` that returns prompt ids, completion ids, the
sampling logprob of each completion token (for TRL's importance-sampling correction) and extra fields; an
`env_mask` among them marks which completion tokens the model produced (the rest are masked out of the loss).
Each dataset row is a task id; `rollout_func` runs whole episodes (policy ↔ scripted user ↔ tools) with
`pipeline.train.grpo_rollouts`, and the reward function returns the grader's verdict carried in the extra fields.
Dynamic sampling and infrastructure refills happen there (see that module).

CPU smoke configuration (the default here): 2 tasks per step, 4 episodes per task, sampling at temperature 1,
a few steps; it exercises the whole path in the slow test tier.

GPU settings, with vLLM generating (pip install agentloop[gpu]):

    agentloop train grpo --base sft/ --tasks synth/tasks.jsonl --world gen-1 --steps 200 \\
        --num-generations 8 --tasks-per-step 8 --lr 1e-6 --beta 0.0 --bf16 \\
        --vllm colocate --vllm-gpu-memory 0.3            # one GPU: vLLM shares it with training
    # or: trl vllm-serve --model sft/ on other GPUs, then --vllm server --vllm-host 127.0.0.1 --vllm-port 8000

In both modes the weights are synced to vLLM after each optimizer step (TRL does it before calling
`rollout_func`), and a group's episodes sample together through `trainer.vllm_generation`, one call per step.
"""

from __future__ import annotations

import importlib.util
import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from pipeline.authoring import held_out
from pipeline.dataset import Task, check_provenance, read_tasks
from pipeline.errors import InputError
from pipeline.formats import CodecConfig, CodecFormat
from pipeline.grading import check_tasks
from pipeline.progress import track
from pipeline.train.finite import FiniteCallback, NonFiniteTrainingError, first_non_finite
from pipeline.train.grpo_config import GRPOConfig
from pipeline.train.grpo_rollouts import (
    EpisodeRollouts,
    PolicyAgent,
    grouped,
    local_generate,
    local_generate_batch,
    to_trl,
    vllm_generate,
    vllm_generate_batch,
)
from pipeline.train.lora import peft_config
from pipeline.train.progress_callback import TrackerCallback
from pipeline.train.sft_base import TrainBase, load_base
from pipeline.train.sft_data import file_sha256
from pipeline.train.time_budget import TimeBudgetCallback
from pipeline.train.update import check_update
from pipeline.users import ScriptedUser
from pipeline.world import load_world

log = logging.getLogger(__name__)


@dataclass
class GRPOResult:
    out: Path
    steps: int
    rewards: list[float] = field(default_factory=list)
    reward_std: list[float] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)


def stop_tokens(base: TrainBase) -> set[int]:
    """The chat format's end-of-turn tokens and, for an outside model, its generation eos tokens."""
    if base.format is None:
        return CodecFormat(base.meta.codec_config or CodecConfig()).stop_ids(base.tokenizer)
    stops = base.format.stop_ids(base.tokenizer)
    eos = getattr(getattr(base.model, "generation_config", None), "eos_token_id", None)
    return stops | {e for e in (eos if isinstance(eos, list) else [eos]) if isinstance(e, int)}


def verdict_reward(prompts: list, completions: list, verdict_reward: list[float], **_: Any) -> list[float | None]:
    """The reward is the verdict the rollout computed (1.0 pass, 0.0 fail)."""
    return [float(r) for r in verdict_reward]


def make_rollout_func(rollouts: EpisodeRollouts, num_generations: int):
    def rollout_func(prompts: list[str], trainer: Any) -> dict[str, list]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        was_training = model.training
        model.eval()
        try:
            groups = rollouts.fill(grouped(prompts, num_generations), num_generations)
        finally:
            model.train(was_training)
        return to_trl(groups)

    return rollout_func


def check_vllm(mode: str, gpu: bool) -> None:
    """vLLM generation needs vLLM installed and a GPU: refused before anything loads, naming the setting."""
    if mode == "off":
        return
    if importlib.util.find_spec("vllm") is None:
        raise InputError(
            f"vllm {mode!r}: vLLM is not installed (pip install vllm, on a GPU machine), or use --vllm off"
        )
    if not gpu:
        raise InputError(f"vllm {mode!r}: vLLM generation needs a GPU and torch sees none; use --vllm off")


def build_trainer(params: GRPOConfig, scratch: str, tasks: list[Task] | None = None):
    """The GRPOTrainer and the rollouts behind it (exposed for tests and for custom loops)."""
    from datasets import Dataset
    from trl import GRPOConfig as TRLGRPOConfig
    from trl import GRPOTrainer

    gpu = torch.cuda.is_available()
    check_vllm(params.vllm, gpu)
    tasks = tasks if tasks is not None else [t for p in params.tasks for t in read_tasks(p)]
    if not tasks:
        raise InputError("GRPO: empty task pool")
    where = ", ".join(map(str, params.tasks)) or "GRPO task pool"
    guard = held_out(params.held_out)  # no evaluation customer trains: held-out tasks' customers first
    guard.check_tasks(tasks, where)
    world = load_world(params.world or tasks[0].world, params.domain)
    for path in params.tasks:  # a task file made in another domain or world (or its tables since changed)
        check_provenance(path, world)
    check_tasks(world, tasks, "GRPO task pool")  # a task its world cannot run would reward 0 (or 1) for nothing
    guard.add_world(world).check_tasks(tasks, where)  # then the world's evaluation partition
    base = load_base(params.base, torch.bfloat16 if params.bf16 and gpu and params.lora is not None else torch.float32)
    fmt = base.format or CodecFormat(base.meta.codec_config or CodecConfig())
    stop_ids = stop_tokens(base)
    batch = params.num_generations * params.tasks_per_step
    args = TRLGRPOConfig(
        output_dir=scratch,
        max_steps=params.steps,
        learning_rate=params.learning_rate,
        per_device_train_batch_size=params.num_generations,
        gradient_accumulation_steps=params.tasks_per_step,
        generation_batch_size=batch,
        num_generations=params.num_generations,
        beta=params.beta,
        loss_type=params.loss_type,
        temperature=params.temperature,
        max_completion_length=params.max_new_tokens,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=params.seed,
        bf16=params.bf16 and gpu,
        use_cpu=not gpu,
        use_vllm=params.vllm != "off",
        vllm_mode="colocate" if params.vllm == "off" else params.vllm,
        vllm_gpu_memory_utilization=params.vllm_gpu_memory,
        vllm_server_host=params.vllm_host,
        vllm_server_port=params.vllm_port,
        generation_kwargs={"stop_token_ids": sorted(stop_ids)} if params.vllm != "off" else None,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    by_id = {t.id: t for t in tasks}
    model = base.model
    context = int(model.config.max_position_embeddings)
    trainer_ref: dict[str, Any] = {}

    def make_agent() -> PolicyAgent:
        trainer = trainer_ref["trainer"]
        generate_batch = None
        if params.vllm != "off":  # the turns of a group's episodes go to vLLM together
            generate = vllm_generate(trainer.vllm_generation)
            generate_batch = vllm_generate_batch(trainer.vllm_generation)
        else:
            live = trainer.accelerator.unwrap_model(trainer.model)
            generate = local_generate(live, stop_ids, params.temperature)
            generate_batch = local_generate_batch(live, stop_ids, params.temperature)
        return PolicyAgent(
            base.tokenizer,
            fmt,
            generate,
            context=context,
            max_new_tokens=params.max_new_tokens,
            max_prompt_length=params.max_prompt_length,
            stop_ids=stop_ids,
            generate_batch=generate_batch,
            seed=params.seed,
            name="policy",
        )

    rollouts = EpisodeRollouts(
        world=world,
        tasks=by_id,
        user=ScriptedUser(),
        make_agent=make_agent,
        limits=params.limits,
        max_resamples=params.max_resamples,
        max_infra_retries=params.max_infra_retries,
        seed=params.seed,
    )
    dataset = Dataset.from_dict({"prompt": [t.id for t in tasks]})
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[verdict_reward],
        args=args,
        train_dataset=dataset,
        processing_class=base.tokenizer,
        rollout_func=make_rollout_func(rollouts, params.num_generations),
        peft_config=peft_config(params.lora),
    )
    trainer_ref["trainer"] = trainer
    return trainer, rollouts, base


def run_grpo(params: GRPOConfig, out: Path, tasks: list[Task] | None = None) -> GRPOResult:
    """Train with GRPO and write the checkpoint to `out`."""
    if params.threads:
        torch.set_num_threads(params.threads)
    adapter: Path | None = None
    with tempfile.TemporaryDirectory(prefix="agentloop-grpo-") as scratch:
        trainer, rollouts, base = build_trainer(params, scratch, tasks)
        with track("GRPO", None, "steps") as progress:
            trainer.add_callback(TrackerCallback(progress))
            trainer.add_callback(FiniteCallback(params.learning_rate))
            budget = TimeBudgetCallback(params.max_minutes * 60) if params.max_minutes else None
            if budget is not None:
                trainer.add_callback(budget)
            result = trainer.train()
        model = trainer.model
        if params.lora is not None:
            if params.lora.save_adapter:  # moved into the checkpoint folder as it is written whole
                adapter = Path(tempfile.mkdtemp(prefix="agentloop-adapter-"))
                model.save_pretrained(str(adapter))
            model = model.merge_and_unload()
        history = trainer.state.log_history
    rewards = [float(e["reward"]) for e in history if "reward" in e]
    stds = [float(e["reward_std"]) for e in history if "reward_std" in e]
    stats = dict(rollouts.stats)
    manifest = {"tasks": [{"path": str(p), "sha256": file_sha256(p)} for p in params.tasks], "rollouts": stats}
    bad = first_non_finite(model, trainable_only=False)
    if bad is not None:  # what the per-step check cannot see (a frozen weight, a merge)
        raise NonFiniteTrainingError(f"trained weight {bad} is not finite; nothing was saved")
    check_update(model, params.base)  # a weight moved absurdly far (LoRA's alpha 1e9) is refused, named
    base.save(
        Path(out),
        model,
        adapter=adapter,
        training={
            "kind": "grpo",
            **params.record(),
            "rewards": rewards,
            "steps_done": int(result.global_step),
            **({"stopped_by_time_budget": True} if budget is not None and budget.stopped_at else {}),
        },
        data_manifest=manifest,
        parent=str(params.base),
    )
    log.info("GRPO: %d steps, rewards %s, rollouts %s", result.global_step, rewards, stats)
    return GRPOResult(out=Path(out), steps=int(result.global_step), rewards=rewards, reward_std=stds, stats=stats)
