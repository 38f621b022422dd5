"""A tiny random-weight checkpoint fitted to one conversation, so `agentloop serve` tests get a model that says
something known (a line, a tool call) instead of noise."""

from __future__ import annotations

from pathlib import Path

from pipeline.agents.checkpoint import CheckpointMeta, ModelConfig, save_checkpoint
from pipeline.domains.retail.policy import POLICY_SUMMARY
from pipeline.domains.retail.tools import TOOLS
from pipeline.embedded.model import build_model
from pipeline.embedded.tokenizer import TokenizerConfig, build_corpus, train_tokenizer
from pipeline.formats.codec import CodecConfig, encode_conversation
from pipeline.rollout import Message
from pipeline.world import World

COMPACT = CodecConfig(system="compact", tool_results="compact", policy_summary=POLICY_SUMMARY)


def fitted_checkpoint(
    path: Path, world: World, convo: list[Message], config: ModelConfig, steps: int = 60, lr: float = 2e-2
) -> Path:
    """Train a tiny model on `convo`'s assistant turns (compact format, retail tools) and save it at `path`."""
    import torch

    tokenizer = train_tokenizer(build_corpus(world, 10), TokenizerConfig(vocab_size=512))
    model = build_model(config, tokenizer)
    enc = encode_conversation(convo, TOOLS.schemas(), world.policy, tokenizer, COMPACT)
    ids = torch.tensor([enc.ids])
    labels = torch.where(torch.tensor([enc.assistant_mask]) == 1, ids, -100)
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    for _ in range(steps):
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    save_checkpoint(path, model, tokenizer, CheckpointMeta.for_codec(COMPACT, model=config))
    return path
