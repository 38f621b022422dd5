"""A model directory's `agent.json`: which agent spec measures it (an hf checkpoint or any other agent)."""

from __future__ import annotations

import json
from pathlib import Path

AGENT_FILE = "agent.json"


def write_agent_ref(model_dir: Path, spec: str, **extra: object) -> Path:
    model_dir.mkdir(parents=True, exist_ok=True)
    path = model_dir / AGENT_FILE
    path.write_text(json.dumps({"spec": spec, **extra}, indent=2, sort_keys=True) + "\n")
    return path


def read_agent_spec(model_dir: Path) -> str:
    path = Path(model_dir) / AGENT_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path}: no agent reference (run the stage that builds this model first)")
    return json.loads(path.read_text())["spec"]


def sampled(spec: str, temperature: float | None) -> str:
    """A checkpoint agent's spec with the measuring protocol's sampling temperature (other agents unchanged)."""
    if temperature is None or not spec.startswith(("hf:", "vllm:")) or "temperature=" in spec:
        return spec
    return f"{spec},temperature={temperature:g}"
