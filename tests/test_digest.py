"""`pipeline.digest` is the one JSON hash: each variant gives, byte for byte, the digest its call site took before.

Checked on the committed data (the SmolLM2 evaluation tasks, dvc.lock's stages, params.yaml, the metrics and gate
files), plus text that json escapes differently with and without `ensure_ascii`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from pipeline.digest import canonical_json, sha256_json

ROOT = Path(__file__).resolve().parents[1]


def _committed() -> list:
    values: list = [{"é": "naïve — ✓", "b": [1, 2.5, None, True]}, ["😀", {"z": 1, "a": {"y": "x"}}]]
    values += [json.loads(line) for line in (ROOT / "data/smollm2/eval.jsonl").read_text().splitlines() if line]
    values += list(yaml.safe_load((ROOT / "dvc.lock").read_text())["stages"].values())
    values.append(yaml.safe_load((ROOT / "params.yaml").read_text()))
    values += [
        json.loads((ROOT / p).read_text()) for p in ("metrics/baseline.json", "metrics/gate.json", "gate/gate.json")
    ]
    return values


VALUES = _committed()


def _old(obj, **kw) -> str:
    return hashlib.sha256(json.dumps(obj, **kw).encode()).hexdigest()


@pytest.mark.parametrize("i", range(len(VALUES)))
def test_every_variant_matches_the_expression_it_replaced(i):
    obj = VALUES[i]
    # world state and fingerprints (world/tables.py): canonical JSON
    assert sha256_json(obj) == _old(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(obj) == json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # codec and template hashes, task keys, params digests: json.dumps(obj, sort_keys=True) as it comes
    assert sha256_json(obj, compact=False, ensure_ascii=True) == _old(obj, sort_keys=True)
    # trajectory keys (curate/select.py)
    assert sha256_json(obj, compact=False, ensure_ascii=True, default=str) == _old(obj, sort_keys=True, default=str)
    # dvc stage digests (tracking/dvc.py)
    expected = _old(obj, sort_keys=True, separators=(",", ":"), default=str)
    assert sha256_json(obj, ensure_ascii=True, default=str) == expected


def test_the_committed_data_has_text_that_the_variants_escape_differently():
    """So the test above compares more than ASCII: some value's canonical text differs from its escaped one."""
    assert any(canonical_json(v) != json.dumps(v, sort_keys=True, separators=(",", ":")) for v in VALUES)
