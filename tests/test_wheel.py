"""A wheel built from the tree holds every data file the packages read, and works installed (not editable).

The wheel is built from a copy of the tracked files (what a clean clone holds), offline, with the setuptools
installed here. Installed into a fresh venv, its `agentloop` replays τ²-bench's airline and retail tasks and
generates worlds under each domain's packaged policy, run from a directory outside the repository so that
nothing of the checkout is imported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "pipeline"
BUILD_INPUTS = ("pyproject.toml", "README.md", PACKAGE)


def _tracked(*paths: str) -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    out = subprocess.run(["git", "ls-files", "-z", *paths], cwd=ROOT, capture_output=True, check=True)
    return [p for p in out.stdout.decode().split("\0") if p and (ROOT / p).is_file()]


def _env() -> dict[str, str]:
    """The environment without the checkout on the path: the installed package is what runs."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return env | {"HF_HUB_OFFLINE": "1", "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of a copy of the tracked build inputs, built offline without build isolation."""
    base = tmp_path_factory.mktemp("wheel")
    src, dist = base / "src", base / "dist"
    for rel in _tracked(*BUILD_INPUTS):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q", "-w", str(dist)],
        cwd=base,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (found,) = dist.glob("agentloop-*.whl")
    return found


def test_the_wheel_holds_every_tracked_data_file_of_the_package(wheel):
    data = sorted(p for p in _tracked(PACKAGE) if not p.endswith(".py"))
    assert f"{PACKAGE}/domains/airline/policy.md" in data  # the policy the airline domain reads
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert [p for p in data if p not in names] == []
        assert all(z.read(p) == (ROOT / p).read_bytes() for p in data)
    modules = [p for p in _tracked(PACKAGE) if p.endswith(".py")]
    assert [p for p in modules if p not in names] == []
    dist_info = "-".join(wheel.name.split("-")[:2]) + ".dist-info"
    assert {n.split("/")[0] for n in names} == {PACKAGE, dist_info}  # nothing else of the tree


@pytest.mark.slow
def test_the_installed_wheel_replays_airline_and_retail(wheel, tmp_path, tau2_airline_dir, tau2_dir):
    from pipeline.tau2.replay import write_replay
    from pipeline.world.registry import resolve_domain

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    python, agentloop = venv / "bin" / "python", venv / "bin" / "agentloop"
    outside = tmp_path / "elsewhere"  # no checkout here or above: only the installed package can be imported
    outside.mkdir()
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
        cwd=outside,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    where = subprocess.run(
        [str(python), "-c", "import pipeline; print(pipeline.__file__)"],
        cwd=outside,
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(venv), where

    for name, data, n_tasks in (("airline", tau2_airline_dir, 50), ("retail", tau2_dir, 114)):
        out = outside / f"{name}.jsonl"
        run = subprocess.run(
            [str(agentloop), "world", "replay", "--domain", str(data), "--out", str(out)],
            cwd=outside,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"replayed {n_tasks} tasks" in run.stdout + run.stderr  # the CLI's console writes to stderr
        lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert len(lines) == n_tasks and sum(1 for line in lines if any(line["changed"].values())) > n_tasks // 3
        checkout = write_replay(data, tmp_path / f"{name}-checkout.jsonl")  # the same replay from the checkout
        assert out.read_bytes() == (tmp_path / f"{name}-checkout.jsonl").read_bytes()
        assert lines == checkout

    sizes = {"airline": ["--users", "4", "--flights", "4", "--reservations", "2"], "retail": ["--products", "3"]}
    for name, size in sizes.items():  # a generated world is served under the domain's own packaged policy
        world = outside / f"{name}-world"
        run = subprocess.run(
            [str(agentloop), "world", "generate", "--domain", name, "--out", str(world), *size],
            cwd=outside,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert (world / "policy.md").read_text(encoding="utf-8") == resolve_domain(name).policy()
