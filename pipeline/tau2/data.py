"""Where τ²-bench's data sets are: one resolver for the benchmarks, the tests and anyone running from a checkout.

A data set (`retail`, `airline`, `telecom`) is a directory holding τ²-bench's `db.json` (with `policy.md` and
`tasks.json`). The first place that names or holds it wins:

1. `AGENTLOOP_TAU2_<NAME>` (e.g. `AGENTLOOP_TAU2_AIRLINE`): that data set's directory;
2. `AGENTLOOP_SHARED`: a directory holding `tau2_retail/`, `tau2_airline/`, `tau2_telecom/`;
3. `../shared/tau2_<name>` beside the repository this package was imported from, beside the git top level of
   the current directory, and beside the current directory.

A variable that is set is an instruction: if what it names does not hold the data, that is an error naming the
variable, never a silent fall-through to the next place. `python -m pipeline.tau2.data` prints what it finds;
`python -m pipeline.tau2.data telecom` prints only telecom's directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pipeline.errors import InputError

DATASETS = ("retail", "airline", "telecom")
SHARED_VAR = "AGENTLOOP_SHARED"
MARKER = "db.json"


class Tau2DataNotFound(InputError, FileNotFoundError):
    """A τ²-bench data set found in none of the places searched (or not where a variable points)."""


def dataset_var(name: str) -> str:
    """The variable naming one data set's directory, e.g. AGENTLOOP_TAU2_AIRLINE."""
    return f"AGENTLOOP_TAU2_{name.upper()}"


def _git_toplevel(cwd: Path) -> Path | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def shared_roots(cwd: Path | None = None) -> list[Path]:
    """The `shared` directories searched when no variable is set, in order, without repeats."""
    cwd = Path.cwd() if cwd is None else cwd
    repo = Path(__file__).resolve().parents[2]  # the checkout holding this package (editable install)
    bases = [repo, _git_toplevel(cwd), cwd.resolve()]
    roots: list[Path] = []
    for base in bases:
        if base is not None and (root := (base.parent / "shared").resolve()) not in roots:
            roots.append(root)
    return roots


def tau2_data_dir(name: str, *, cwd: Path | None = None) -> Path:
    """The directory of τ²-bench's `name` data set (see the module's docstring for where it is looked for)."""
    if name not in DATASETS:
        raise InputError(f"unknown τ²-bench data set {name!r}: expected one of {', '.join(DATASETS)}")
    var = dataset_var(name)
    if value := os.environ.get(var, "").strip():
        path = Path(value).expanduser().resolve()
        if not (path / MARKER).is_file():
            raise Tau2DataNotFound(f"{var}={value}: no {MARKER} in {path}")
        return path
    if value := os.environ.get(SHARED_VAR, "").strip():
        path = (Path(value).expanduser() / f"tau2_{name}").resolve()
        if not (path / MARKER).is_file():
            raise Tau2DataNotFound(f"{SHARED_VAR}={value}: no tau2_{name}/{MARKER} in {path.parent}")
        return path
    searched = [root / f"tau2_{name}" for root in shared_roots(cwd)]
    for path in searched:
        if (path / MARKER).is_file():
            return path
    raise Tau2DataNotFound(
        f"τ²-bench {name} data not found (no {MARKER} in {', '.join(map(str, searched))}); "
        f"set {var} to its directory or {SHARED_VAR} to the directory holding tau2_{name}/"
    )


def main(argv: list[str] | None = None) -> int:
    """Every data set and where it is; with a name, only that data set's directory (for a shell's `$(…)`)."""
    args = sys.argv[1:] if argv is None else argv
    if args:
        try:
            print(tau2_data_dir(args[0]))
        except InputError as exc:  # no such data set, or not found
            print(exc, file=sys.stderr)
            return 1
        return 0
    found = 0
    for name in DATASETS:
        try:
            print(f"{name}\t{tau2_data_dir(name)}")
            found += 1
        except Tau2DataNotFound as exc:
            print(f"{name}\tmissing: {exc}")
    return 0 if found == len(DATASETS) else 1


if __name__ == "__main__":
    sys.exit(main())
