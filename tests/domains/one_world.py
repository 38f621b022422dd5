"""`dvc exp run` of every stage of the loop on a one-world domain (docs/domains.md, "The loop on a one-world
domain"), in a copy of the repository, with scripted participants and small sizes."""

from __future__ import annotations

from pathlib import Path

LOOP_STAGES = ("eval_tasks", "baseline", "measure", "target", "synthesize", "curate", "train", "remeasure", "gate",
               "report", "promote")  # fmt: skip


def exp_run_one_world(tmp_path: Path, spec: str, world: str, baseline: str) -> Path:
    """The repository copy after the run; fails unless the run succeeded and ran every stage."""
    from tests.loop.loop_helpers import copy_repo, dvc

    sets = {
        "world.domain": spec,
        "world.eval_world": world,
        "world.train_world": world,
        "world.eval_tasks": "16",
        "baseline.source": f'"agent:{baseline}"',
        "train.method": "agent:oracle",
        "measure.trials": "2",
        "measure.executor": "serial",
        "measure.resamples": "200",
        "target.budget": "12",
        "synthesize.anchors": "8",
        "curate.probes": "1",
        "curate.executor": "serial",
        "gate.k": "2",
        "gate.resamples": "300",
    }
    repo = copy_repo(tmp_path)
    overrides = [a for k, v in sets.items() for a in ("-S", f"{k}={v}")]
    run = dvc(repo, "exp", "run", "--single-item", *overrides, *LOOP_STAGES, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for stage in LOOP_STAGES:
        assert f"Running stage '{stage}'" in run.stdout, stage
    return repo
