"""`agentloop measure` and `agentloop curate` with `--executor ray --address` on a real two-node Ray cluster
started on this host with `ray start` (a head and a second node, one CPU each): the serial run's verdicts,
trials on both nodes (from timings.jsonl), and no process of that cluster left behind.

Teardown kills the cluster's own processes (found by its temp dir), not every Ray process on the machine as
`ray stop` would: other Ray instances on the host are not this test's to stop."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import write_tasks
from pipeline.measure import MeasureConfig, measure
from pipeline.world.registry import load_world

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
ROOT = Path(__file__).resolve().parents[2]
WORLD = "gen-9-10x40x80"
AGENT = "flawed:plan_adherence=0.3,invention=0.3,seed=1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cluster_processes(psutil, tag: str) -> set:
    """Every process whose command line names the cluster's temp dir, and their children (Ray's workers)."""
    me = os.getpid()
    found = set()
    for proc in psutil.process_iter(["cmdline"]):
        if proc.pid != me and tag in " ".join(proc.info["cmdline"] or []):
            found.add(proc)
            with contextlib.suppress(psutil.Error):
                found.update(proc.children(recursive=True))
    return found


def _ray_start(args: list[str], env: dict) -> None:
    cmd = [shutil.which("ray") or "ray", "start", *args]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(cmd)} did not return in 120 s: {exc.stdout}{exc.stderr}")
    if done.returncode:
        pytest.fail(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")


@pytest.fixture(scope="module")
def two_nodes():
    """(head address, environment) of a head and a second node on this host; killed in teardown, whatever
    happened (a failed start included)."""
    psutil = pytest.importorskip("psutil")
    if shutil.which("ray") is None:
        pytest.skip("the `ray` command is not installed")
    temp = Path(tempfile.mkdtemp(prefix="alray-", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": str(ROOT)}  # workers import pipeline
    env.pop("RAY_ADDRESS", None)
    port = _free_port()
    common = ["--num-cpus=1", "--disable-usage-stats", f"--temp-dir={temp}"]
    try:
        head = ["--head", f"--port={port}", "--include-dashboard=false", '--resources={"head_node": 1}']
        _ray_start([*head, f"--dashboard-agent-listen-port={_free_port()}", *common], env)
        second = [f"--address=127.0.0.1:{port}", '--resources={"second_node": 1}']
        _ray_start([*second, f"--dashboard-agent-listen-port={_free_port()}", *common], env)
        yield f"127.0.0.1:{port}", env
    finally:
        procs = _cluster_processes(psutil, str(temp))
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        _, alive = psutil.wait_procs(procs, timeout=30)
        shutil.rmtree(temp, ignore_errors=True)
        assert not _cluster_processes(psutil, str(temp)) and not alive, "Ray processes left behind"


def test_measure_on_a_two_node_cluster_gives_the_serial_verdicts_from_both_nodes(two_nodes, tmp_path):
    address, env = two_nodes
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, generate_tasks(load_world(WORLD), 8, seed=3))
    measure(MeasureConfig(world=WORLD, tasks=tasks, agent=AGENT, trials=2), tmp_path / "serial")
    cmd = [sys.executable, "-m", "pipeline.cli", "measure", "--world", WORLD, "--tasks", str(tasks)]
    cmd += ["--agent", AGENT, "--trials", "2", "--out", str(tmp_path / "cluster")]
    cmd += ["--executor", "ray", "--address", address]
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("verdicts.jsonl", "per_task.csv", "metrics.json", "usage.json"):
        assert (tmp_path / "serial" / name).read_bytes() == (tmp_path / "cluster" / name).read_bytes(), name

    def rows(run: str, name: str) -> list[dict]:
        return [json.loads(line) for line in (tmp_path / run / name).read_text().splitlines()]

    timings = rows("cluster", "timings.jsonl")
    assert len(timings) == 16 and all(t["node"] and t["node_ip"] for t in timings)
    assert len({t["node"] for t in timings}) == 2, "both nodes ran trials"
    assert all(t["node"] is None for t in rows("serial", "timings.jsonl"))
    assert not any({"node", "node_ip"} & set(t) for t in rows("cluster", "trajectories.jsonl"))


def test_curate_probes_on_the_cluster_give_the_serial_selection(two_nodes, tmp_path):
    from pipeline.curate import CurateConfig, curate
    from tests.curate.test_curate import WORLD as POOL_WORLD
    from tests.curate.test_curate import pool

    address, env = two_nodes
    tasks, trajectories = pool()
    write_tasks(tmp_path / "tasks.jsonl", list(tasks))
    (tmp_path / "pool.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in trajectories))
    args = dict(pool=[tmp_path / "pool.jsonl"], tasks=tmp_path / "tasks.jsonl", world=POOL_WORLD, agent=AGENT)
    curate(CurateConfig(**args, probes=3), tmp_path / "serial")
    cmd = [sys.executable, "-m", "pipeline.cli", "curate", "--pool", str(tmp_path / "pool.jsonl")]
    cmd += ["--tasks", str(tmp_path / "tasks.jsonl"), "--world", POOL_WORLD, "--agent", AGENT, "--probes", "3"]
    cmd += ["--out", str(tmp_path / "cluster"), "--executor", "ray", "--address", address]
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("selected.jsonl", "manifest.json"):
        assert (tmp_path / "serial" / name).read_bytes() == (tmp_path / "cluster" / name).read_bytes(), name
