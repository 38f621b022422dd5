"""`python -m pipeline.loop.show KEY`: print one validated params.yaml value (for shell steps in CI)."""

from __future__ import annotations

import sys

from pipeline.errors import AgentloopError, InputError
from pipeline.loop.params import load_params


def lookup(key: str, path: str = "params.yaml") -> object:
    value: object = load_params(path).model_dump(mode="json")
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise InputError(f"params.yaml has no key {key!r}")
        value = value[part]
    return value


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m pipeline.loop.show SECTION.KEY")
    try:
        print(lookup(sys.argv[1]))
    except AgentloopError as exc:  # no such key, or a params.yaml that does not load: one line
        raise SystemExit(f"error: {exc}") from None
