"""The CI job summary reads as a person would write it: changes in percentage points, tokens where unpriced."""

from __future__ import annotations

import json

from pipeline.loop import paths
from pipeline.loop.summary import job_summary
from tests.tracking.conftest import make_summary


def test_the_job_summary_has_points_tokens_and_no_python_literals(tmp_path):
    base = make_summary("flawed", {"a-1": [True, False, False, False], "a-2": [True] * 4})
    cand = make_summary("trained", {"a-1": [True, True, True, False], "a-2": [True] * 4})
    for run, s in ((paths.BASELINE_RUN, base), (paths.CANDIDATE_RUN, cand)):
        (tmp_path / run).mkdir(parents=True)
        (tmp_path / run / "metrics.json").write_text(s.model_dump_json())
    gate = {
        "outcome": "block",
        "promote": False,
        "reasons": ["r"],
        "pass_hat_k": {"k": 4, "diff": 0.0, "low": -0.25, "high": 0.5, "margin": 0.0},
    }
    (tmp_path / paths.GATE).parent.mkdir(parents=True)
    (tmp_path / paths.GATE).write_text(json.dumps(gate))
    text = job_summary(tmp_path)
    assert "| pass^1 | 62.5% | 87.5% | +25.0 pp |" in text and "| pass^4 | 50.0% | 50.0% | +0.0 pp |" in text
    assert "| agent tokens per success (not priced) |" in text and "USD" not in text
    assert "gain +0.0 pp (interval -25.0 pp … +50.0 pp, margin +0.0 pp)" in text
    assert not any(word in text for word in ("None", "True", "False"))
