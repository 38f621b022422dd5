"""A Llama-architecture checkpoint directory written as a GGUF file, for llama.cpp to run (`llamacpp`).

The loop trains and registers transformers checkpoints; llama.cpp runs GGUF files. The export reads the
directory's safetensors, names each tensor as llama.cpp does (gguf's own name map), undoes transformers'
rotate-half layout of the query and key projections (llama.cpp rotates interleaved pairs), and stores the weights
as float32, float16 or Q8_0 (gguf's own quantizer). The vocabulary is written from the checkpoint's tokenizer so
llama.cpp loads it, but agentloop never lets llama.cpp tokenize: prompts go in as the ids the checkpoint's own
chat format renders, so both engines see the same tokens.

Files are cached by the checkpoint's content digest and the weight type (`AGENTLOOP_GGUF_CACHE`, default
`~/.cache/agentloop/gguf`), so a checkpoint is exported once and a changed one is never served stale.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.errors import InputError

log = logging.getLogger(__name__)
WEIGHT_TYPES = ("f32", "f16", "q8_0")
CACHE_ENV = "AGENTLOOP_GGUF_CACHE"


class GGUFExportError(InputError, ValueError):
    """A checkpoint llama.cpp cannot be given (the message names the directory and what is missing)."""


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "agentloop" / "gguf")


def _config(path: Path) -> dict[str, Any]:
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError) as exc:
        raise GGUFExportError(f"{path / 'config.json'}: unreadable ({exc})") from None
    if config.get("model_type") != "llama":
        raise GGUFExportError(
            f"{path}: model_type {config.get('model_type')!r}: the llama.cpp engine takes Llama-architecture"
            " checkpoints only"
        )
    rope = {**(config.get("rope_scaling") or {}), **(config.get("rope_parameters") or {})}  # transformers 4 / 5
    if rope.get("rope_type", rope.get("type")) not in (None, "default"):
        raise GGUFExportError(f"{path}: rope {rope!r} is not exported (plain rotary embeddings only)")
    config["rope_theta"] = float(rope.get("rope_theta", config.get("rope_theta", 10000.0)))
    return config


def _tensors(path: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise GGUFExportError(f"{path}: no *.safetensors weights to export")
    out: dict[str, np.ndarray] = {}
    for f in files:
        try:
            out.update(load_file(str(f)))
        except TypeError:  # bfloat16 has no numpy dtype: read it through torch
            import torch
            from safetensors.torch import load_file as load_torch

            out.update({k: v.to(torch.float32).numpy() for k, v in load_torch(str(f)).items()})
    return out


def weights_digest(path: Path) -> str:
    """sha256 over the files the export reads (config and weights): the same weights, the same GGUF."""
    digest = hashlib.sha256()
    for f in [path / "config.json", *sorted(path.glob("*.safetensors"))]:
        with f.open("rb") as fh:
            digest.update(f.name.encode() + b"\0" + hashlib.file_digest(fh, "sha256").digest())
    return digest.hexdigest()


def _interleave(w: np.ndarray, heads: int) -> np.ndarray:
    """transformers' rotate-half rows of a query/key projection in llama.cpp's interleaved-pair order."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _vocabulary(path: Path, rows: int) -> tuple[list[str], list[int]]:
    """Token strings by id (padded to the embedding's rows) and their types (1 normal, 3 control)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    vocab = tok.get_vocab()
    special = set(tok.all_special_ids)
    by_id = {i: t for t, i in vocab.items()}
    tokens = [by_id.get(i, f"[PAD{i}]") for i in range(rows)]
    types = [3 if i in special or i not in by_id else 1 for i in range(rows)]
    return tokens, types


def export_gguf(checkpoint: str | Path, weight_type: str = "f32", out: Path | None = None) -> Path:
    """The GGUF file for ``checkpoint`` in ``weight_type`` (exported now unless the cache holds it)."""
    import gguf

    path = Path(checkpoint)
    if weight_type not in WEIGHT_TYPES:
        raise GGUFExportError(f"weight type {weight_type!r}: expected one of {', '.join(WEIGHT_TYPES)}")
    if not path.is_dir():
        raise GGUFExportError(f"{path}: no such checkpoint directory")
    config = _config(path)
    digest = weights_digest(path)
    out = out or cache_dir() / f"{digest[:16]}-{weight_type}.gguf"
    if out.exists():
        return out
    tensors = _tensors(path)
    blocks = int(config["num_hidden_layers"])
    heads = int(config["num_attention_heads"])
    kv_heads = int(config.get("num_key_value_heads") or heads)
    hidden = int(config["hidden_size"])
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, blocks)
    qtype = {
        "f32": gguf.GGMLQuantizationType.F32,
        "f16": gguf.GGMLQuantizationType.F16,
        "q8_0": gguf.GGMLQuantizationType.Q8_0,
    }[weight_type]
    file_type = {"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16}.get(
        weight_type, gguf.LlamaFileType.MOSTLY_Q8_0
    )

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".{os.getpid()}.part")
    writer = gguf.GGUFWriter(str(tmp), "llama")
    writer.add_name(path.name)
    writer.add_context_length(int(config.get("max_position_embeddings", 2048)))
    writer.add_embedding_length(hidden)
    writer.add_block_count(blocks)
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(int(config.get("head_dim") or hidden // heads))
    writer.add_layer_norm_rms_eps(float(config.get("rms_norm_eps", 1e-6)))
    writer.add_rope_freq_base(config["rope_theta"])
    writer.add_file_type(file_type)
    rows = tensors["model.embed_tokens.weight"].shape[0]
    tokens, types = _vocabulary(path, rows)
    writer.add_vocab_size(rows)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    special = gguf.SpecialVocab(path, load_merges=True, n_vocab=rows)
    if not special.merges:  # llama.cpp's BPE loader wants merges; it never tokenizes here, so any one will do
        special.merges = [f"{tokens[0]} {tokens[1]}"]
    special.add_to_gguf(writer, quiet=True)

    for name, w in tensors.items():
        if name.endswith("rotary_emb.inv_freq"):
            continue
        w = w.astype(np.float32)
        if name.endswith("q_proj.weight"):
            w = _interleave(w, heads)
        elif name.endswith("k_proj.weight"):
            w = _interleave(w, kv_heads)
        target = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if target is None:
            raise GGUFExportError(f"{path}: tensor {name!r} has no llama.cpp name")
        # 1-d tensors (norms) and rows that do not divide into Q8_0 blocks stay float32, as llama.cpp's converter does
        keep = w.ndim == 1 or (qtype == gguf.GGMLQuantizationType.Q8_0 and w.shape[-1] % 32)
        data_type = gguf.GGMLQuantizationType.F32 if keep else qtype
        data = gguf.quants.quantize(w, data_type) if data_type != gguf.GGMLQuantizationType.F32 else w
        writer.add_tensor(target, data, raw_dtype=data_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, out)
    log.info("%s: exported to %s (%s, %.1f MB)", path, out, weight_type, out.stat().st_size / 1e6)
    return out
