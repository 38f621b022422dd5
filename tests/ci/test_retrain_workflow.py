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
