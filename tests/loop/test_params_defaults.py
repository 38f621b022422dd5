"""The code's defaults of every params section are the committed params.yaml's values: a section left out of a
params file runs the loop as committed, and reading the code tells what the loop does."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.loop.params import Params, load_params

ROOT = Path(__file__).resolve().parents[2]


def _differences(code: object, committed: object, path: str = "") -> list[str]:
    if isinstance(code, dict) and isinstance(committed, dict):
        return [
            d
            for k in sorted(set(code) | set(committed))
            for d in _differences(code.get(k, "<absent>"), committed.get(k, "<absent>"), f"{path}.{k}".lstrip("."))
        ]
    return [] if code == committed else [f"{path}: code {code!r}, params.yaml {committed!r}"]


COMMITTED = load_params(ROOT / "params.yaml").model_dump(mode="json")
DEFAULTS = Params().model_dump(mode="json")


@pytest.mark.parametrize("section", sorted(COMMITTED))
def test_code_defaults_equal_the_committed_params(section: str) -> None:
    assert _differences(DEFAULTS[section], COMMITTED[section], section) == []


def test_the_check_sees_a_difference() -> None:
    assert _differences({"a": {"b": 1}}, {"a": {"b": 2}}) == ["a.b: code 1, params.yaml 2"]
    assert _differences({"a": 1}, {}) == ["a: code 1, params.yaml '<absent>'"]
