"""A model directory's `agent.json`: which agent measures it (a checkpoint it holds, or any other agent spec).

Two forms:

- a checkpoint the directory holds: `{"backend": "hf", "checkpoint": "checkpoint", "options": "...",
  "checkpoint_digest": "..."}`. `checkpoint` is relative to the directory itself, so the directory means the same
  wherever it is copied (the registry stores it as is; the next iteration fetches it into `models/baseline`).
  `checkpoint_digest` is the sha256 of the checkpoint's files (`directory_digest`).
- any other agent, as a spec: `{"spec": "oracle"}` (scripted agents, endpoints, an outside `hf:PATH`).

`read_agent_spec` turns either into the spec that loads it from where the directory is now.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from pipeline.errors import InputError
from pipeline.outputs import atomic_write, writing

AGENT_FILE = "agent.json"
CHECKPOINT_DIR = "checkpoint"
CHECKPOINT_BACKENDS = ("hf", "llamacpp", "vllm")


class AgentRefError(InputError, ValueError):
    """An agent.json that does not say which agent measures its directory, or says it wrongly."""


def write_agent_ref(model_dir: Path, spec: str, **extra: object) -> Path:
    """`agent.json` naming an agent spec as is (an agent whose files, if any, are not in this directory)."""
    return _write(model_dir, {"spec": spec, **extra})


def write_checkpoint_ref(model_dir: Path, backend: str = "hf", options: str = "", **extra: object) -> Path:
    """`agent.json` for the checkpoint in `model_dir/checkpoint`, with its digest; `options` are the spec's
    settings after the path (`temperature=0.7,draft=4`), kept when the directory moves."""
    from pipeline.agents import directory_digest

    if backend not in CHECKPOINT_BACKENDS:
        raise AgentRefError(f"backend {backend!r}: a checkpoint is loaded by one of {', '.join(CHECKPOINT_BACKENDS)}")
    ckpt = Path(model_dir) / CHECKPOINT_DIR
    if not ckpt.is_dir():
        raise AgentRefError(f"{ckpt}: no checkpoint directory to reference")
    ref = {"backend": backend, "checkpoint": CHECKPOINT_DIR, "options": options, **extra}
    ref["checkpoint_digest"] = directory_digest(ckpt)
    return _write(model_dir, ref)


def _write(model_dir: Path, ref: dict[str, Any]) -> Path:
    model_dir.mkdir(parents=True, exist_ok=True)
    path = model_dir / AGENT_FILE
    atomic_write(path, json.dumps(ref, indent=2, sort_keys=True) + "\n")
    return path


def read_agent_ref(model_dir: Path) -> dict[str, Any]:
    path = Path(model_dir) / AGENT_FILE
    if not path.exists():
        raise AgentRefError(f"{path}: no agent reference (run the stage that builds this model first)")
    try:
        ref = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise AgentRefError(f"{path}: not JSON ({exc})") from None
    if not isinstance(ref, dict) or ("spec" in ref) == ("checkpoint" in ref):
        raise AgentRefError(f"{path}: expected exactly one of 'spec' (an agent spec) or 'checkpoint' (a directory)")
    if "checkpoint" in ref:
        rel = Path(str(ref["checkpoint"]))
        if rel.is_absolute() or ".." in rel.parts:
            raise AgentRefError(f"{path}: checkpoint {str(rel)!r} must be a path inside the model directory")
        if ref.get("backend") not in CHECKPOINT_BACKENDS:
            raise AgentRefError(f"{path}: backend {ref.get('backend')!r}: expected one of {CHECKPOINT_BACKENDS}")
    return ref


def read_agent_spec(model_dir: Path) -> str:
    """The spec that loads the directory's agent from where the directory is now."""
    ref = read_agent_ref(model_dir)
    if "spec" in ref:
        return ref["spec"]
    options = ref.get("options") or ""
    return f"{ref['backend']}:{Path(model_dir) / ref['checkpoint']}" + (f",{options}" if options else "")


def agent_label(model_dir: Path) -> str:
    """The directory's agent as it reads anywhere: `hf:checkpoint[,options]` for a checkpoint it holds (the path
    relative to the directory), else its spec."""
    ref = read_agent_ref(model_dir)
    if "spec" in ref:
        return ref["spec"]
    options = ref.get("options") or ""
    return f"{ref['backend']}:{ref['checkpoint']}" + (f",{options}" if options else "")


def split_checkpoint_spec(spec: str) -> tuple[str, Path, str] | None:
    """(backend, local directory, options) of an hf:/vllm: spec naming a local directory; None otherwise."""
    kind, _, body = spec.partition(":")
    if kind not in CHECKPOINT_BACKENDS or not body:
        return None
    path, _, options = body.partition(",")
    return (kind, Path(path), options) if Path(path).is_dir() else None


def packaged(model_dir: Path, scratch: Path) -> Path:
    """The directory to store in a registry: `model_dir` itself when everything its agent needs is inside it (or
    it needs no files); when its spec names a checkpoint elsewhere (`agent:hf:PATH`), a copy in `scratch` holding
    that checkpoint and a reference relative to itself, so that what is stored never names a local path."""
    ref = read_agent_ref(model_dir)
    found = split_checkpoint_spec(ref["spec"]) if "spec" in ref else None
    if found is None:
        return Path(model_dir)
    backend, src, options = found
    if scratch.exists():
        shutil.rmtree(scratch)
    with writing(scratch, "the copy to register is incomplete; free space and run again"):
        shutil.copytree(src, scratch / CHECKPOINT_DIR)
    extra = {k: v for k, v in ref.items() if k != "spec"}
    write_checkpoint_ref(scratch, backend, options, **extra)
    return scratch
