"""The embedded default: a tiny agent model the project builds on CPU from nothing it downloads.

`build_baseline` makes, in order (each step seeded, so the same config gives the same checkpoint bytes on the
same machine and torch build):

1. a training world, generated (never the held-out evaluation world), and a byte-level BPE tokenizer trained on
   conversations rendered from it (`pipeline.embedded.tokenizer`);
2. a ~0.8M-parameter Llama from a transformers config, with a copy circuit planted at initialisation
   (`pipeline.embedded.copy_circuit`): without it the model does not learn to copy ids within minutes;
3. optionally, a short synthetic copy warm-up (`pipeline.embedded.warmup`; off by default, the circuit makes it
   unnecessary);
4. the baseline: the plain training loop on a deliberately imperfect corpus, the oracle with failure modes
   planted on the situations that invite them (`pipeline.embedded.corpus`), so the model fails there the way real
   agents do, and targeted data has something to fix.

The codec has no system turn and compact tool results (`EMBEDDED_CODEC`): the model learns the policy from its
corpus, and the full system prompt alone is longer than its context. Loss weights: 1 on assistant text,
`call_weight` on assistant tool calls (whose every token must be exact for the episode to succeed),
`context_weight` on the rest of the conversation.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator

from pipeline.agents import CheckpointMeta, ModelConfig, save_checkpoint
from pipeline.authoring import DEFAULT_CYCLE
from pipeline.domains.retail.policy import POLICY_SUMMARY
from pipeline.embedded.copy_circuit import COPY_ROPE, circuit_misfit, plant_copy_circuit
from pipeline.embedded.corpus import SituatedFlaws
from pipeline.embedded.data import EXAMPLES_FILE
from pipeline.embedded.model import build_model
from pipeline.embedded.tokenizer import TokenizerConfig
from pipeline.embedded.train_loop import LoopConfig, train_loop
from pipeline.embedded.warmup import WarmupConfig, warmup_examples
from pipeline.formats import CodecConfig

log = logging.getLogger(__name__)
COMPACT = CodecConfig(system="compact", tool_results="compact", policy_summary=POLICY_SUMMARY)
EMBEDDED_CODEC = CodecConfig(system="none", tool_results="compact", policy_summary=POLICY_SUMMARY)
"""The embedded model never reads a policy (it learns the policy from its corpus): no system turn, a third less
compute per conversation, and `key: value` tool results."""
WRITES = ("cancel", "modify_address", "modify_payment", "modify_items", "return", "exchange", "modify_user_address")
CORPUS_CYCLE: tuple[str, ...] = (*DEFAULT_CYCLE, *WRITES)
"""The corpus' template cycle: every template, two-request tasks, and each write once more (writes are what the
tiny model finds hard; refusals it learns quickly)."""


class EmbeddedConfig(BaseModel):
    """Everything that decides the embedded default baseline (a DVC stage's params)."""

    model_config = ConfigDict(extra="forbid")

    seed: int = Field(default=0, description="Seed of the model initialisation, corpus planting and shuffling.")
    train_world: str = Field(
        default="gen-7", description="Generated world the tokenizer and corpus come from (never the eval world)."
    )
    tokenizer: TokenizerConfig = Field(default_factory=lambda: TokenizerConfig(model_max_length=8192))
    tokenizer_conversations: int = Field(default=200, ge=1, description="Look-up conversations in its corpus.")
    model: ModelConfig = Field(
        default_factory=lambda: ModelConfig(max_position_embeddings=8192, rope_scaling=COPY_ROPE),
        description="Model shape; RoPE positions cost nothing (long look-ups can exceed 4k tokens), and the copy"
        " circuit needs COPY_ROPE.",
    )
    copy_circuit: bool = Field(default=True, description="Plant the copy circuit at initialisation.")
    copy_offsets: int = Field(
        default=3,
        ge=1,
        description="Tokens the planted copy head matches on (one layer-0 head each; at most model.num_heads)."
        " Four (with copy_code 6) copy ids with repeated digits far better before training, but the loop's"
        " candidate came out 6 to 10 points lower in pass^4 (docs/experiments.md, 2026-12-02).",
    )
    copy_code: int = Field(
        default=8, ge=2, description="Width of each token's code in the copy circuit (offsets x code <= head_dim)."
    )
    warmup: WarmupConfig | None = Field(
        default=None,
        description="Synthetic copy warm-up before the corpus; None = none (the planted copy circuit makes it"
        " unnecessary: on 2 cores the warm-up alone never reached its induction phase within 1000 steps).",
    )
    warmup_loop: LoopConfig = Field(default_factory=lambda: LoopConfig(learning_rate=3e-3, batch_tokens=4096))
    corpus_tasks: int = Field(default=3600, ge=1, description="Generated training tasks for the baseline corpus.")
    corpus_seed: int = Field(default=1, description="Task generation seed of the corpus.")
    corpus_templates: list[str] = Field(
        default_factory=lambda: list(CORPUS_CYCLE), description="Template cycle of the corpus tasks."
    )
    flaws: SituatedFlaws = Field(default_factory=SituatedFlaws)
    context_weight: float = Field(default=0.1, ge=0, le=1, description="Loss weight of non-assistant tokens.")
    call_weight: float = Field(default=3.0, gt=0, description="Loss weight of assistant tool calls (text: 1).")
    loop: LoopConfig = Field(
        default_factory=lambda: LoopConfig(epochs=20, max_steps=12000, learning_rate=3e-3, batch_tokens=4096),
        description="About an hour on 2 cores (at 6,000 steps plain writes were still garbled; the build is kept"
        " in git, so `dvc repro` on a fresh clone skips it).",
    )
    codec: CodecConfig = Field(default=EMBEDDED_CODEC, description="Codec the model is trained and evaluated with.")
    threads: int = Field(default=2, ge=1, description="torch CPU threads.")

    @model_validator(mode="after")
    def _circuit_fits(self) -> EmbeddedConfig:
        """Refuse a copy circuit the model shape cannot hold when params load, naming this section's fields."""
        heads = self.model.num_heads
        if self.copy_circuit and (
            misfit := circuit_misfit(heads, self.model.hidden_size // heads, self.copy_offsets, self.copy_code)
        ):
            raise ValueError(f"copy_offsets / copy_code do not fit model.hidden_size / model.num_heads: {misfit}")
        return self


def build_baseline(config: EmbeddedConfig, out: str | Path, data_dir: str | Path | None = None) -> dict[str, Any]:
    """Build the embedded default baseline checkpoint in `out`; returns a report (timings, losses, counts).

    `data_dir` holds the tokenizer and encoded corpus (`pipeline.embedded.data`, the `embedded_data`
    stage); None builds them first, in a temporary directory."""
    from pipeline.embedded.data import build_data, load_data

    if data_dir is None:
        with tempfile.TemporaryDirectory() as tmp:
            build_data(config, tmp)
            return build_baseline(config, out, tmp)
    torch.set_num_threads(config.threads)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    data = load_data(data_dir)
    tokenizer, examples = data.tokenizer, data.examples
    t = time.perf_counter()
    model_config = config.model.model_copy(update={"seed": config.seed})
    model = build_model(model_config, tokenizer)
    if config.copy_circuit:
        plant_copy_circuit(model, tokenizer, offsets=config.copy_offsets, code=config.copy_code, seed=config.seed)
    seconds["model"] = time.perf_counter() - t

    warm_tokens = 0
    if config.warmup is not None:
        t = time.perf_counter()
        warm = warmup_examples(tokenizer, config.warmup.model_copy(update={"seed": config.seed}))
        warm_tokens = train_loop(model, warm, tokenizer.pad_token_id, config.warmup_loop).tokens
        seconds["warmup"] = time.perf_counter() - t

    t = time.perf_counter()
    result = train_loop(model, examples, tokenizer.pad_token_id, config.loop.model_copy(update={"seed": config.seed}))
    seconds["baseline"] = time.perf_counter() - t

    manifest = {
        **{k: v for k, v in data.manifest.items() if k != "sha256"},
        "examples_sha256": data.manifest["sha256"][EXAMPLES_FILE],
        "warmup_tokens": warm_tokens,
    }
    training = {
        "kind": "embedded_baseline",
        "config": json.loads(config.model_dump_json()),
        "baseline_loss": [result.losses[0], result.losses[-1]],
        "steps": result.steps,
        "tokens_per_s": result.tokens_per_s,
    }
    meta = CheckpointMeta.for_codec(config.codec, model=model_config, training=training, data_manifest=manifest)
    save_checkpoint(out, model, tokenizer, meta)
    seconds = {k: round(v, 1) for k, v in seconds.items()}
    report = {
        "seconds": seconds,
        "seconds_total": round(time.perf_counter() - t0, 1),
        **manifest,
        "baseline_loss": training["baseline_loss"],
        "steps": result.steps,
    }
    log.info("embedded baseline → %s: %s", out, report)
    return report
