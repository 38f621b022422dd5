"""OpenMP threads wait passively in every process that imports the package (set before torch loads), unless the
environment already says otherwise."""

import os
import subprocess
import sys

from tests.loop.loop_helpers import ROOT

CODE = "import os, pipeline.train.sft, torch; print(os.environ['OMP_WAIT_POLICY'], torch.get_num_threads() >= 1)"


def _policy(**env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    done = subprocess.run(
        [sys.executable, "-c", CODE], env={**base, "PYTHONPATH": str(ROOT), **env}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[0]


def test_the_package_sets_a_passive_wait_before_torch_loads():
    assert _policy() == "PASSIVE"


def test_a_policy_already_in_the_environment_is_kept():
    assert _policy(OMP_WAIT_POLICY="ACTIVE") == "ACTIVE"
