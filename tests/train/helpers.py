"""A small world, tasks, gold trajectories and a tiny checkpoint shared by the training tests."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pipeline.agents.checkpoint import CheckpointMeta, ModelConfig, save_checkpoint
from pipeline.authoring.templates import generate_tasks
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.domains.retail.policy import POLICY_SUMMARY
from pipeline.embedded.corpus import run_corpus
from pipeline.embedded.model import build_model
from pipeline.embedded.tokenizer import TokenizerConfig, build_corpus, train_tokenizer
from pipeline.formats.codec import CodecConfig
from pipeline.world.registry import load_world

COMPACT = CodecConfig(system="compact", tool_results="compact", policy_summary=POLICY_SUMMARY)
TINY = ModelConfig(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, max_position_embeddings=4096)
WORLD = "gen-5-8x30x60"


@lru_cache(maxsize=1)
def world():
    return load_world(WORLD)


@lru_cache(maxsize=1)
def tasks():
    return tuple(generate_tasks(world(), 16, seed=0))


@lru_cache(maxsize=1)
def gold():
    return tuple(run_corpus(world(), tasks(), OracleAgent(), trials=1, seed=0, passing_only=True))


@lru_cache(maxsize=1)
def tokenizer():
    return train_tokenizer(build_corpus(world(), 20), TokenizerConfig(vocab_size=512, model_max_length=4096))


def tiny_checkpoint(path: Path, model: ModelConfig = TINY) -> Path:
    tok = tokenizer()
    save_checkpoint(path, build_model(model, tok), tok, CheckpointMeta.for_codec(COMPACT, model=model))
    return path


def write_jsonl(path: Path, records) -> Path:
    with path.open("w") as fh:
        for r in records:
            fh.write(r.model_dump_json() + "\n")
    return path
