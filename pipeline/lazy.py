"""Exports a package imports only when first used (PEP 562), for the exports whose modules need a heavy library:
`agentloop --help` and the commands that never touch a model stay fast."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """The package's module `__getattr__`: each name in `where` imported from its module when first asked for."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(where[name]), name)

    return __getattr__
