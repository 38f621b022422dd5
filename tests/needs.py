"""What a test needs from the machine beyond the Python dependencies.

Locally a missing tool, module or data set skips the test with the reason and the way to install it. Under
`CI=true` it fails instead: `scripts/setup.sh` installs everything the test command needs, so a skip there would
hide a broken set-up and report tests as run that never ran.
"""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path
from types import ModuleType

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _missing(what: str, install: str) -> None:
    if in_ci():
        pytest.fail(f"{what} is missing, and CI=true runs every test ({install})", pytrace=False)
    pytest.skip(f"{what} not available ({install})")


def need_tool(*names: str, install: str) -> str:
    """The path of the first of `names` on PATH."""
    for name in names:
        if path := shutil.which(name):
            return path
    _missing(" / ".join(names), install)
    raise AssertionError("unreachable")


def need_module(name: str, install: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError:
        _missing(f"Python module {name}", install)
        raise AssertionError("unreachable") from None


def need_path(path: Path, what: str, install: str) -> Path:
    if not path.exists():
        _missing(f"{what} at {path}", install)
    return path


def need_tau2(name: str) -> Path:
    """The directory of τ²-bench's `name` data set, found by `pipeline.tau2.data.tau2_data_dir`."""
    from pipeline.tau2.data import Tau2DataNotFound, tau2_data_dir

    try:
        return tau2_data_dir(name)
    except Tau2DataNotFound as exc:
        _missing(f"τ²-bench {name} data", str(exc))
        raise AssertionError("unreachable") from None


def need_postgres() -> Path:
    """The bin directory of a PostgreSQL server (Debian's `postgresql` package), as scripts/postgres.sh finds it."""
    if found := os.environ.get("AGENTLOOP_PG_BIN"):
        return need_path(
            Path(found) / "initdb", "PostgreSQL's initdb", "AGENTLOOP_PG_BIN names its bin directory"
        ).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if versions:
        return versions[-1].parent
    initdb = shutil.which("initdb")
    if initdb is None:
        _missing("the PostgreSQL server (initdb)", "apt-get install postgresql; scripts/setup.sh does")
        raise AssertionError("unreachable")
    return Path(initdb).resolve().parent
