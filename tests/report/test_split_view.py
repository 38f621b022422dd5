"""The report shows pass^k over the 'act' and the 'refuse' tasks apart, beside pass^k and in the gate view; runs
measured before the split existed say so."""

from __future__ import annotations

import html
import json
import re
import shutil

from pipeline.report import build_report
from pipeline.report.gate_view import read_gate
from tests.report.conftest import WORLD


def _text(path) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", path.read_text())))


def test_the_split_is_beside_pass_hat_k_and_in_the_gate_view(runs, tmp_path):
    out = build_report(runs.baseline, runs.candidate, runs.tasks, WORLD, gate_json=runs.gate, out=tmp_path / "r.html")
    text = _text(out)
    base = json.loads((runs.baseline / "metrics.json").read_text())["by_expected"]
    cand = json.loads((runs.candidate / "metrics.json").read_text())["by_expected"]
    for side, what in (("act", "the gold changes the world"), ("refuse", "the gold changes nothing")):
        n = cand[side]["tasks"]
        b, c = base[side]["pass_hat_k"]["2"], cand[side]["pass_hat_k"]["2"]
        assert f"pass^2 over {side} tasks ({what}, {n} tasks) {b:.1%} {c:.1%}" in text
        low, high = cand[side]["intervals"]["pass_hat_2"]
        assert f"{side} ({what}) 2 " in text and f"{c:.1%} [{low:.1%}, {high:.1%}]" in text
    assert "An agent that never acts passes every task whose gold changes nothing" in text
    gate = json.loads(runs.gate.read_text())["by_expected"]
    view = read_gate(runs.gate)
    assert view.by_expected == gate
    act = gate["act"]
    assert f"act {act['tasks']} {act['champion']:.3f} {act['candidate']:.3f} {act['diff']:+.3f}" in text
    assert "shown, not the promotion criterion" in text


def test_runs_measured_before_the_split_say_so(runs, tmp_path):
    copies = {}
    for name in ("baseline", "candidate"):
        copies[name] = tmp_path / name
        shutil.copytree(getattr(runs, name), copies[name])
        metrics = json.loads((copies[name] / "metrics.json").read_text())
        del metrics["by_expected"]
        (copies[name] / "metrics.json").write_text(json.dumps(metrics))
    out = build_report(copies["baseline"], copies["candidate"], runs.tasks, WORLD, out=tmp_path / "r.html")
    text = _text(out)
    assert "hold no split by expected outcome" in text and "over act tasks" not in text


def test_the_by_template_table_counts_each_templates_trials(runs, tmp_path):
    from pipeline.dataset import read_tasks

    out = build_report(runs.baseline, runs.candidate, runs.tasks, WORLD, gate_json=runs.gate, out=tmp_path / "r.html")
    text = _text(out)
    template = {t.id: t.provenance.template for t in read_tasks(runs.tasks)}
    assert len(set(template.values())) > 3
    for name in sorted(set(template.values())):
        mine = [t for t in template if template[t] == name]
        figures = []
        for run in (runs.baseline, runs.candidate):
            passed = {}
            for line in (run / "verdicts.jsonl").read_text().splitlines():
                v = json.loads(line)
                v = v.get("verdict", v)
                if v["task_id"] in mine:
                    passed.setdefault(v["task_id"], []).append(bool(v["passed"]))
            figures.append(
                (
                    sum(sum(p) / len(p) for p in passed.values()) / len(mine),
                    sum(all(p) for p in passed.values()) / len(mine),  # pass^2 of 2 trials: both passed
                )
            )
        (b1, bk), (c1, ck) = figures
        assert f"{name} {len(mine)} {b1:.1%} {c1:.1%} {bk:.1%} {ck:.1%}" in text
    assert "By template" in text and 'href="#templates"' in out.read_text()
