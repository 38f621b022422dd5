"""Any causal LM checkpoint for the agent backends, in its own architecture and dtype, on the device asked for.

An agentloop checkpoint (the embedded model and what the loop trains from it, `agentloop.json` in the codec
format) loads exactly as it always has. Any other directory with a transformers model and tokenizer loads with
the Auto classes; its chat format is read from its chat template (`pipeline.formats.detect_format`) and
recorded in `agentloop.json` the first time it is used, or by `agentloop model import PATH`, so later runs (and
the run journal's checkpoint digest) see the same format.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from pipeline.agents.checkpoint import (
    META_FILE,
    CheckpointMeta,
    check_finite,
    load_tokenizer,
    read_meta,
    verify_codec,
)
from pipeline.errors import InputError
from pipeline.formats import (
    CODEC,
    ChatFormat,
    ChatFormatError,
    CodecConfig,
    CodecFormat,
    detect_format,
    get_format,
    probe_template,
)
from pipeline.outputs import WriteError, atomic_write

log = logging.getLogger(__name__)
DType = Literal["auto", "fast", "float32", "bfloat16", "float16"]
DTYPES = ("auto", "fast", "float32", "bfloat16", "float16")
"""`fast`: bfloat16 where the hardware has it (a GPU, or a CPU with AMX / AVX-512 BF16), float32 elsewhere."""


@dataclass
class LoadedModel:
    model: torch.nn.Module
    tokenizer: Any
    format: ChatFormat
    meta: CheckpointMeta
    path: Path

    @property
    def stop_ids(self) -> set[int]:
        """The format's end-of-turn tokens, and (outside checkpoints) the model's generation eos tokens."""
        stops = self.format.stop_ids(self.tokenizer)
        if not isinstance(self.format, CodecFormat):
            eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
            stops |= {e for e in (eos if isinstance(eos, list) else [eos]) if isinstance(e, int)}
        return stops

    @property
    def context(self) -> int:
        cfg: Any = self.model.config
        cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        n = getattr(cfg, "max_position_embeddings", None) or getattr(self.tokenizer, "model_max_length", None)
        return int(min(n, 1 << 20)) if n else 2048


def _dtype_name(config: Any) -> str | None:
    dtype = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    return str(dtype).removeprefix("torch.") if dtype is not None else None


@contextmanager
def unreadable(path: Path) -> Iterator[None]:
    """A checkpoint transformers cannot read (no tokenizer files, no weights, an unknown architecture: its OSError,
    ValueError or KeyError) as an InputError naming the directory and transformers' first line."""
    try:
        yield
    except (OSError, ValueError, KeyError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{path}: transformers cannot read this checkpoint: {first}") from exc


def format_of(tokenizer: Any, chat_format: str | None = None, where: str = "the tokenizer") -> tuple[str, ChatFormat]:
    """The format `chat_format` names (else the one the tokenizer's chat template calls for), checked against the
    tokenizer: ChatFormatError naming the format when it is unknown or the tokenizer cannot carry it, and
    TemplateTimeoutError naming `where` when its chat template does not render a short conversation in time."""
    name = chat_format or detect_format(tokenizer)
    fmt = get_format(name)
    fmt.check_tokenizer(tokenizer)
    probe_template(fmt, tokenizer, where)
    return name, fmt


def template_file(path: Path) -> Path:
    """Where a checkpoint keeps its chat template (transformers' own file, else the tokenizer's config)."""
    own = path / "chat_template.jinja"
    return own if own.is_file() else path / "tokenizer_config.json"


def describe(
    path: str | Path, chat_format: str | None = None, tokenizer: Any = None
) -> tuple[CheckpointMeta, ChatFormat, Any]:
    """The metadata of an outside checkpoint (its tokenizer and config only, no weights), its format, tokenizer.
    `tokenizer`: the one to describe it with instead of the one saved there (one given a template not yet saved)."""
    from transformers import AutoConfig, AutoTokenizer

    path = Path(path)
    if not (path / "config.json").is_file():
        raise InputError(
            f"{path}: no model here (no config.json: neither an agentloop checkpoint nor a transformers one)"
        )
    if tokenizer is None:
        with unreadable(path):
            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    name, fmt = format_of(tokenizer, chat_format, str(template_file(path)))
    with unreadable(path):
        config = AutoConfig.from_pretrained(str(path), local_files_only=True)
    fields: dict[str, Any] = {
        "model": None,
        "architecture": (getattr(config, "architectures", None) or [None])[0],
        "dtype": _dtype_name(config),
        "training": {"kind": "imported", "source": str(path.resolve())},
    }
    if name == CODEC:
        meta = CheckpointMeta.for_codec(CodecConfig(), **fields)
    else:
        meta = CheckpointMeta(chat_format=fmt.name, template_hash=fmt.template_hash(tokenizer), **fields)
    return meta, fmt, tokenizer


def import_model(
    path: str | Path, chat_format: str | None = None, force: bool = False, chat_template: str | None = None
) -> CheckpointMeta:
    """Write `agentloop.json` for an outside checkpoint; refuses to replace an existing one unless `force`.

    `chat_template`: Jinja text given to the tokenizer first (saved as transformers saves one), for a base model's
    checkpoint that holds none or one to replace. Everything is checked before any file is written: the format's
    name, the checkpoint's config and tokenizer, the format against the tokenizer as it will be saved."""
    path = Path(path)
    if chat_format is not None:
        get_format(chat_format)  # an unknown name is refused before anything is read or written
    if not path.is_dir():
        raise InputError(f"{path}: no such model directory")
    if (path / META_FILE).exists() and not force:
        raise InputError(f"{path / META_FILE} exists (use --force to record the format again)")
    tokenizer = None
    if chat_template is not None:
        from transformers import AutoTokenizer

        with unreadable(path):
            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        tokenizer.chat_template = chat_template
    meta, _, _ = describe(path, chat_format, tokenizer)  # raises before the tokenizer is rewritten
    if tokenizer is not None:
        tokenizer.save_pretrained(str(path))
    atomic_write(path / META_FILE, meta.model_dump_json(indent=2) + "\n")
    log.info("%s: recorded chat format %r (%s, %s)", path, meta.chat_format, meta.architecture, meta.dtype)
    return meta


def check_placement(device: str | None, dtype: str = "auto") -> None:
    """Refuse, before anything loads, a dtype or device this machine cannot give (ValueError naming it)."""
    if dtype not in DTYPES:
        raise InputError(f"dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    if device is None or device == "cpu":
        return
    kind, _, index = device.partition(":")
    if kind not in ("cuda", "auto") or (kind == "auto" and index) or (index and not index.isdigit()):
        raise InputError(f"device {device!r}: expected cpu, cuda, cuda:N or auto")
    if not torch.cuda.is_available():
        raise InputError(f"device {device!r}: no GPU is available on this machine (torch sees no CUDA device)")
    if index and int(index) >= torch.cuda.device_count():
        raise InputError(f"device {device!r}: this machine has {torch.cuda.device_count()} GPU(s)")


def resolve_dtype(device: str | None, dtype: str) -> str:
    """`dtype` with `fast` replaced by what this machine runs fast (`hardware.fast_dtype`)."""
    if dtype != "fast":
        return dtype
    from pipeline.agents.backends.hardware import cpu_info, fast_dtype

    picked = fast_dtype(device)
    log.info("dtype fast → %s (%s, %s)", picked, device or "cpu", cpu_info()["cpu_model"])
    return picked


def _placement(device: str | None, dtype: str) -> dict[str, Any]:
    check_placement(device, dtype)
    dtype = resolve_dtype(device, dtype)
    kwargs: dict[str, Any] = {"dtype": dtype if dtype == "auto" else getattr(torch, dtype)}
    if device:
        kwargs["device_map"] = device  # "auto" spreads over the GPUs (accelerate); "cuda", "cuda:1", "cpu"
    return kwargs


def resolve_format(
    path: str | Path, chat_format: str | None = None, codec_config: CodecConfig | None = None, record: bool = True
) -> tuple[ChatFormat, Any, CheckpointMeta, bool]:
    """(format, tokenizer, meta, is an agentloop checkpoint) of a checkpoint directory, without its weights.

    An outside checkpoint's metadata is written on this first use when `record` (a read-only directory only
    logs a warning, and the format is detected again next time)."""
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"{path}: no such model directory")
    meta = read_meta(path) if (path / META_FILE).exists() else None
    if meta is not None and meta.chat_format == CODEC and chat_format in (None, CODEC) and meta.model is not None:
        config = verify_codec(path, meta, codec_config)  # raises CodecMismatchError naming agentloop.json
        return CodecFormat(config), load_tokenizer(path), meta, True
    described, fmt, tokenizer = describe(path, chat_format or (meta.chat_format if meta else None))
    if meta is not None and meta.template_hash and meta.template_hash != described.template_hash and not chat_format:
        raise ChatFormatError(
            f"{path / META_FILE}: recorded for format {meta.chat_format!r} under another chat template; run"
            f" `agentloop model import {path} --force` to record the current one"
        )
    if isinstance(fmt, CodecFormat) and meta is not None and meta.codec_config is not None:
        fmt = CodecFormat(verify_codec(path, meta, codec_config))
    if meta is None and record:
        try:
            atomic_write(path / META_FILE, described.model_dump_json(indent=2) + "\n")
            log.info("%s: recorded chat format %r in %s", path, described.chat_format, META_FILE)
        except WriteError as exc:
            log.warning("%s: could not record %s (%s); the format is detected on each load", path, META_FILE, exc)
    return fmt, tokenizer, meta or described, False


def load_model(
    path: str | Path,
    *,
    device: str | None = None,
    dtype: str = "auto",
    chat_format: str | None = None,
    codec_config: CodecConfig | None = None,
    record: bool = True,
) -> LoadedModel:
    """The model (Auto classes: its own architecture), tokenizer and format of a checkpoint directory.

    `device`: None or "cpu" (CPU), "cuda", "cuda:N", or "auto" (accelerate's device_map over the GPUs).
    `dtype`: "auto" = the checkpoint's own, "fast" = bfloat16 where the hardware has it, or float32 / bfloat16 /
    float16."""
    from transformers import AutoModelForCausalLM

    fmt, tokenizer, meta, ours = resolve_format(path, chat_format, codec_config, record)
    placement = _placement(device, dtype)
    if ours and device is None and dtype == "auto":
        placement = {}  # exactly as agentloop checkpoints always loaded
    with unreadable(Path(path)):
        model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, **placement).eval()
    check_finite(model, path)  # a NaN/inf checkpoint is refused here, not measured as pass^1 0%
    log.info("loaded %s as %s (%s) in format %r", path, type(model).__name__, _dtype_name(model.config), fmt.name)
    return LoadedModel(model, tokenizer, fmt, meta, Path(path))


def cache_argument(model: torch.nn.Module) -> str:
    """The name the model's forward takes its key/value cache by (transformers 5 renamed `past_key_values` to
    `cache`; either is accepted)."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
