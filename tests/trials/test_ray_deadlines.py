"""Every wait of the Ray executor ends: more workers than CPUs share them, workers the cluster cannot place and
trials that never finish stop the run with an error, and Ctrl-C leaves no Ray process behind."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from pipeline.authoring.templates import generate_tasks
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.trials.executor import SerialExecutor
from pipeline.trials.ray_executor import RayExecutor, RayExecutorError
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world
from tests.trials.ray_helpers import Blocker, SleepyAgent

pytestmark = pytest.mark.slow
WORLD = "gen-9-10x40x80"


@pytest.fixture(scope="module")
def world():
    return load_world(WORLD)


@pytest.fixture(scope="module")
def tasks(world):
    return generate_tasks(world, 8, seed=3)


@pytest.mark.timeout(300)
def test_more_workers_than_cpus_share_them_and_finish(ray_cluster, world, tasks, caplog):
    caplog.set_level(logging.WARNING, logger="pipeline.trials.ray_executor")
    executor = RayExecutor(workers=5, start_timeout_s=120)
    results = list(executor.run(world, tasks, OracleAgent(), ScriptedUser(), trials=2))
    serial = list(SerialExecutor().run(world, tasks, OracleAgent(), ScriptedUser(), trials=2))
    assert [(r.task.id, r.trial, r.verdict.passed) for r in results] == [
        (r.task.id, r.trial, r.verdict.passed) for r in serial
    ]
    assert "5 workers on 2 CPUs: each gets 0.4 CPU" in caplog.text


@pytest.mark.timeout(120)
def test_workers_the_cluster_cannot_place_fail_fast(ray_cluster, world, tasks):
    with pytest.raises(RayExecutorError, match="asks for 1 GPU but the Ray cluster has 0"):
        list(RayExecutor(workers=2, gpus_per_worker=1).run(world, tasks, OracleAgent(), ScriptedUser(), trials=1))
    with pytest.raises(RayExecutorError, match=r"did not start within 3s; each asks for 1 CPU .* 2 CPU"):
        executor = RayExecutor(workers=1, start_timeout_s=3)
        blocker = ray_cluster.remote(num_cpus=2)(Blocker).remote()  # another job holds every CPU
        ray_cluster.get(blocker.ready.remote())
        try:
            list(executor.run(world, tasks, OracleAgent(), ScriptedUser(), trials=1))
        finally:
            ray_cluster.kill(blocker)


@pytest.mark.timeout(120)
def test_a_trial_that_never_finishes_hits_the_stall_deadline(ray_cluster, world, tasks):
    executor = RayExecutor(workers=2, stall_timeout_s=3)
    t0 = time.monotonic()
    with pytest.raises(RayExecutorError, match=r"no trial finished in 3s; 4 in flight \(gen-9"):
        list(executor.run(world, tasks, SleepyAgent(600), ScriptedUser(), trials=1))
    assert time.monotonic() - t0 < 60
    assert executor.actors == []  # stopped, not left running


SCRIPT = textwrap.dedent(
    """
    import os
    from pipeline.trials.ray_executor import RayExecutor
    from pipeline.authoring.templates import generate_tasks
    from pipeline.users.scripted import ScriptedUser
    from pipeline.world.registry import load_world
    from tests.trials.ray_helpers import SleepyAgent

    world = load_world("gen-9-10x40x80")
    tasks = generate_tasks(world, 6, seed=3)
    for result in RayExecutor(workers=1).run(world, tasks, SleepyAgent(2), ScriptedUser(), trials=2):
        print("result", result.task.id, flush=True)
    """
)


@pytest.mark.timeout(300)
def test_ctrl_c_stops_the_run_and_leaves_no_ray_process(tmp_path):
    psutil = pytest.importorskip("psutil")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": os.getcwd()}
    env.pop("RAY_ADDRESS", None)
    proc, out, ray_procs = _interrupted_run(psutil, env)
    assert proc.returncode != 0 and "KeyboardInterrupt" in out
    _, alive = psutil.wait_procs(ray_procs, timeout=30)
    names = [p.name() for p in alive if p.is_running()]
    for p in alive:
        p.kill()
    assert not names, f"Ray processes left behind: {names}"


def _ctrl_c_as_in_a_terminal():
    """SIGINT back to its default in the driver. A suite started as a background job (`cmd &` in a script, as CI
    runners and act do) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt: the driver would
    run every trial to a normal exit, whatever the executor does with the signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupted_run(psutil, env):
    """The script run until its first trial comes back, then sent SIGINT: the process, its output and the Ray
    processes it had started."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        text=True,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )
    lines = []
    for line in proc.stdout:  # wait until a trial has come back: Ray and its worker are up
        lines.append(line)
        if line.startswith("result"):
            break
    else:
        pytest.fail("".join(lines))
    ray_procs = psutil.Process(proc.pid).children(recursive=True)
    assert ray_procs, "the local Ray instance runs as children of the driver"
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("Ctrl-C did not stop the run within 60 s")
    return proc, out, ray_procs
