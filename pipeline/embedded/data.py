"""What the embedded default is trained on, built apart from the training itself.

The embedded build is an hour of CPU; the data it trains on takes a minute and comes from most of the project
(the world, the synthesizer's templates, the oracle and its planted flaws, the user simulator, the runner, the
codec). Splitting the two lets DVC decide by content: a change anywhere in that code reruns the data stage, and
the expensive stage reruns only when the data's bytes (or the training code, or the `embedded` params) differ.

The data directory holds:

    tokenizer/           the byte-level BPE tokenizer trained on rendered look-up conversations
    examples.safetensors every corpus conversation's token ids and loss weights, concatenated, with offsets
    manifest.json        counts (tasks, trajectories, tokens, planted flaws, situations) and the sha256 of each file

Its digests are what `check_checkpoint` compares with a checkpoint's `data_manifest`, so whether the committed
checkpoint still matches the code's recipe is a minute's check rather than an hour's rebuild.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch
from safetensors.torch import load_file, save
from transformers import PreTrainedTokenizerFast

from pipeline.embedded.train_loop import Example
from pipeline.errors import InputError
from pipeline.outputs import atomic_write

log = logging.getLogger(__name__)
EXAMPLES_FILE = "examples.safetensors"
MANIFEST_FILE = "manifest.json"
TOKENIZER_DIR = "tokenizer"


@dataclass
class EmbeddedData:
    """The tokenizer, the encoded corpus and its manifest, as the build consumes them."""

    tokenizer: PreTrainedTokenizerFast
    examples: list[Example]
    manifest: dict[str, Any]


def build_data(config, out: str | Path) -> dict[str, Any]:
    """Generate the embedded default's tokenizer and encoded corpus into `out`; returns the manifest.

    `config` is an `EmbeddedConfig` (the fields that decide the data: seeds, train world, tokenizer, corpus
    tasks / templates, flaws, loss weights, codec)."""
    from pipeline.agents import save_tokenizer
    from pipeline.authoring import generate_tasks
    from pipeline.domains.retail.state import RetailWorld
    from pipeline.embedded.corpus import SituatedFlawedAgent, encode_trajectories, run_corpus, situation_counts
    from pipeline.embedded.tokenizer import build_corpus, train_tokenizer
    from pipeline.world import load_world

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    world = cast(RetailWorld, load_world(config.train_world))  # the embedded model is a retail model
    tokenizer = train_tokenizer(build_corpus(world, config.tokenizer_conversations, seed=config.seed), config.tokenizer)
    tasks = generate_tasks(world, config.corpus_tasks, seed=config.corpus_seed, templates=config.corpus_templates)
    agent = SituatedFlawedAgent(world, config.flaws)
    trajectories = run_corpus(world, tasks, agent, trials=1, seed=config.seed)
    weights = {"call_weight": config.call_weight, "context_weight": config.context_weight}
    examples = encode_trajectories(trajectories, world, tokenizer, config.codec, **weights)
    save_tokenizer(tokenizer, out / TOKENIZER_DIR)
    _save_examples(examples, out / EXAMPLES_FILE)
    manifest = {
        "train_world": config.train_world,
        "corpus_tasks": len(tasks),
        "corpus_trajectories": len(trajectories),
        "corpus_tokens": sum(len(e.ids) for e in examples),
        "flawed_trajectories": sum(bool(agent.planted(task, 0)) for task in tasks),
        "situations": situation_counts(world, tasks),
        "sha256": digests(out),
    }
    atomic_write(out / MANIFEST_FILE, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    log.info("embedded data → %s: %d examples, %d tokens", out, len(examples), manifest["corpus_tokens"])
    return manifest


def load_data(directory: str | Path) -> EmbeddedData:
    """Read a data directory written by `build_data`, refusing one whose files no longer match its manifest."""
    from pipeline.agents import load_tokenizer

    directory = Path(directory)
    manifest_path = directory / MANIFEST_FILE
    if not manifest_path.exists():
        raise InputError(f"{manifest_path}: no embedded data here; run `dvc repro embedded_data`")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    found = digests(directory)
    if found != manifest["sha256"]:
        changed = sorted(k for k in set(found) | set(manifest["sha256"]) if found.get(k) != manifest["sha256"].get(k))
        raise InputError(f"{directory}: files differ from {MANIFEST_FILE}: {', '.join(changed)}")
    tensors = load_file(str(directory / EXAMPLES_FILE))
    ids, weights, offsets = tensors["ids"].tolist(), tensors["weights"].tolist(), tensors["offsets"].tolist()
    examples = [Example(ids[a:b], weights[a:b]) for a, b in zip(offsets, offsets[1:], strict=False)]
    return EmbeddedData(load_tokenizer(directory / TOKENIZER_DIR), examples, manifest)


def digests(directory: str | Path) -> dict[str, str]:
    """sha256 of each data file, by path relative to `directory` (the manifest itself excluded)."""
    directory = Path(directory)
    out = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and p.name != MANIFEST_FILE):
        with path.open("rb") as fh:
            out[path.relative_to(directory).as_posix()] = hashlib.file_digest(fh, "sha256").hexdigest()
    return out


def check_checkpoint(data_dir: str | Path, checkpoint: str | Path) -> list[str]:
    """Where a checkpoint's recorded data differs from the data the current recipe builds (empty: it matches).

    Compares the manifest's counts with the checkpoint's `data_manifest`, the corpus digest where the
    checkpoint recorded one, and the tokenizer files byte for byte."""
    from pipeline.agents import read_meta

    data_dir, checkpoint = Path(data_dir), Path(checkpoint)
    manifest = json.loads((data_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
    recorded = read_meta(checkpoint).data_manifest or {}
    problems = [
        f"{key}: checkpoint {recorded.get(key)!r}, recipe {manifest[key]!r}"
        for key in ("train_world", "corpus_tasks", "corpus_trajectories", "corpus_tokens", "flawed_trajectories")
        + ("situations",)
        if key in recorded and recorded[key] != manifest[key]
    ]
    if "examples_sha256" in recorded and recorded["examples_sha256"] != manifest["sha256"][EXAMPLES_FILE]:
        problems.append("examples: the corpus' token ids or weights differ")
    built = PreTrainedTokenizerFast.from_pretrained(str(data_dir / TOKENIZER_DIR), local_files_only=True)
    shipped = PreTrainedTokenizerFast.from_pretrained(str(checkpoint), local_files_only=True)
    if built.get_vocab() != shipped.get_vocab() or json.loads(built.backend_tokenizer.to_str()).get(
        "model"
    ) != json.loads(shipped.backend_tokenizer.to_str()).get("model"):
        problems.append("tokenizer: vocabulary or merges differ")
    return problems


def _save_examples(examples: list[Example], path: Path) -> None:
    offsets = [0]
    for e in examples:
        offsets.append(offsets[-1] + len(e.ids))
    tensors = {
        "ids": torch.tensor([i for e in examples for i in e.ids], dtype=torch.int32),
        "weights": torch.tensor([w for e in examples for w in e.mask], dtype=torch.float32),
        "offsets": torch.tensor(offsets, dtype=torch.int64),
    }
    atomic_write(path, save(tensors))  # the bytes save_file writes, written whole or not at all
