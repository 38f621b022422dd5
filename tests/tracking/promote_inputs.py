"""The inputs the promote stage reads, in a folder of their own: two models, the committed gate.json, held-out
task ids, two runs' metrics and the loop's params, so promote tests on sqlite and on the shared stack build the
same folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.tracking.conftest import make_summary

ROOT = Path(__file__).resolve().parents[2]


def weights(repo: Path, tag: str) -> None:
    """The candidate's checkpoint, with contents of its own per tag (a new version for the registry)."""
    (repo / "models" / "candidate" / "model.safetensors").write_bytes(f"weights {tag}".encode() * 50)


def promote_inputs(repo: Path, **promote: Any) -> Path:
    """Write the folder; `promote` overrides keys of params.yaml's promote section (traces off: no trajectories)."""
    for model in ("baseline", "candidate"):
        (repo / "models" / model).mkdir(parents=True)
        (repo / "models" / model / "agent.json").write_text(json.dumps({"spec": f"hf:models/{model}"}))
    weights(repo, "first")
    (repo / "gate").mkdir()
    shutil.copy(ROOT / "gate" / "gate.json", repo / "gate" / "gate.json")
    (repo / "data" / "eval").mkdir(parents=True)
    (repo / "data" / "eval" / "tasks.jsonl").write_text('{"id": "t1"}\n{"id": "t2"}\n')
    for run, passes in (("baseline", [True, False, True, False]), ("candidate", [True, True, True, False])):
        (repo / "runs" / run).mkdir(parents=True)
        summary = make_summary(f"hf:models/{run}", {"cancel-1": passes, "return-1": passes[::-1]})
        (repo / "runs" / run / "metrics.json").write_text(summary.model_dump_json())
    loop_params = yaml.safe_load((ROOT / "params.yaml").read_text())
    loop_params.setdefault("promote", {}).update(traces=False, **promote)
    (repo / "params.yaml").write_text(yaml.safe_dump(loop_params))
    return repo
