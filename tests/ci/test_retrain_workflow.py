"""retrain.yml's shape, read without running it (the run itself: tests/ci/test_act_retrain_iterations.py, slow):
the iteration comes from the registry before `dvc repro`, the shared cache is pulled before and pushed after,
promote always runs, and `deploy` runs only after a promotion and calls exactly the deploy command."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _workflow() -> dict:
    return yaml.safe_load((ROOT / ".github" / "workflows" / "retrain.yml").read_text())


def _steps(job: dict) -> list[str]:
    return [step.get("run", "") or step.get("uses", "") for step in job["steps"]]


def _index(steps: list[str], text: str) -> int:
    (i,) = [i for i, s in enumerate(steps) if text in s]
    return i


def test_the_next_iteration_pull_repro_push_order():
    steps = _steps(_workflow()["jobs"]["retrain"])
    order = [
        "python -m pipeline.loop.next_iteration --write",
        "dvc pull --run-cache --allow-missing",
        "report\n",  # dvc repro … report
        "dvc push --run-cache",
        "agentloop gate --check",
    ]
    at = [_index(steps, text) for text in order]
    assert at == sorted(at), at
    repro = steps[_index(steps, "report\n")]
    assert "dvc repro --force --single-item promote" in repro  # promote is never restored from a cache


def test_promotion_is_for_pushes_to_main_and_deploy_follows_only_a_promotion():
    wf = _workflow()
    assert "github.event_name == 'push' && github.ref == 'refs/heads/main'" in wf["env"]["AGENTLOOP_PROMOTE"]
    retrain, deploy = wf["jobs"]["retrain"], wf["jobs"]["deploy"]
    assert retrain["outputs"]["promoted"] == "${{ steps.outcome.outputs.promoted }}"
    outcome = next(s for s in retrain["steps"] if s.get("id") == "outcome")
    assert "gate/promotion.json" in outcome["run"] and "champion_moved" in outcome["run"]
    assert deploy["needs"] == "retrain"
    assert deploy["if"] == "${{ needs.retrain.outputs.promoted == 'true' }}"
    assert _steps(deploy)[-1].strip() == "agentloop model deploy --alias production"
    assert deploy["steps"][-1]["run"] == "agentloop model deploy --alias production" and "if" not in deploy["steps"][-1]


def _remote_step(repo: Path, env: dict[str, str]):
    import os
    import subprocess

    step = next(s for s in _workflow()["jobs"]["retrain"]["steps"] if s.get("id") == "remote")
    out = repo / "github_output"
    out.write_text("")
    full = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLOOP_DVC")}
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=repo,
        env={**full, "GITHUB_OUTPUT": str(out), "DVC_NO_ANALYTICS": "1", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, out.read_text()


def test_the_stacks_remote_becomes_the_default_and_an_unmounted_one_fails_in_one_line(tmp_path):
    """What `scripts/stack.sh env` exports (the remote's name in AGENTLOOP_DVC_REMOTE, its directory in
    AGENTLOOP_DVC_REMOTE_URL) is the remote the job pulls from; a directory without the stack's marker is not."""
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["dvc", "init", "-q"], cwd=repo, check=True, env={"DVC_NO_ANALYTICS": "1", "PATH": _path()})
    share = tmp_path / "share"
    share.mkdir()
    stack = {"AGENTLOOP_DVC_REMOTE": "team", "AGENTLOOP_DVC_REMOTE_URL": str(share)}

    done, _ = _remote_step(repo, stack)  # the share is not mounted: no marker
    assert done.returncode == 1
    assert done.stdout.strip().splitlines()[-1].startswith(f"::error::DVC remote team ({share}) is not reachable")

    (share / ".agentloop-dvc-remote").write_text("a DVC remote of agentloop's shared stack\n")
    done, outputs = _remote_step(repo, stack)
    assert done.returncode == 0, done.stderr
    assert outputs == "remote=team\n" and f"DVC remote: team ({share})" in done.stdout

    done, outputs = _remote_step(repo, {"AGENTLOOP_DVC_REMOTE": str(tmp_path / "plain")})  # a URL alone
    assert done.returncode == 0 and outputs == "remote=agentloop\n", done.stderr


def _path() -> str:
    import os

    return os.environ["PATH"]
