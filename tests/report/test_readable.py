"""Numbers a person can read: changes of shares in percentage points, tokens where nothing is priced, no Python
literals; and the iteration history (plot and table) when the report is given one."""

from __future__ import annotations

import json
import re

import pytest

from pipeline.metrics.headline import IterationHeadline, SideHeadline, headline, pp
from pipeline.report import build_report
from pipeline.report.inputs import load_summary
from tests.report.conftest import WORLD


def _text(html_text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html_text))


@pytest.fixture(scope="module")
def report_text(runs, tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("readable") / "report.html"
    build_report(runs.baseline, runs.candidate, runs.tasks, WORLD, gate_json=runs.gate, out=out)
    return out.read_text()


def test_changes_of_shares_are_percentage_points(runs, report_text):
    base, cand = load_summary(runs.baseline), load_summary(runs.candidate)
    text = _text(report_text)
    gain = cand.pass_at_1 - base.pass_at_1
    assert f"pass@1 {base.pass_at_1:.1%} {cand.pass_at_1:.1%} {pp(gain)}" in text
    assert not re.search(r"[+-]\d+(\.\d+)?% ", text.split("Failure modes")[0]), "a signed % where pp is meant"


def test_an_unpriced_run_shows_tokens_not_a_zero_price(runs, report_text):
    base, cand = load_summary(runs.baseline), load_summary(runs.candidate)
    assert not base.cost.priced and not cand.cost.priced
    overview = _text(report_text.split('id="pass-k"')[0])
    assert "0.0000" not in overview and "USD" not in overview
    assert f"agent tokens per success (not priced) {base.cost.tokens_per_success:,.0f}" in overview


def test_the_gate_table_has_no_python_literals(report_text):
    gate = report_text.split('id="gate"')[1].split("<details>")[0]
    cells = re.findall(r"<td>([^<]*)</td>", gate)
    assert cells and not {"True", "False", "None"} & set(cells)
    assert "no" in cells  # the `worse` column of a test that did not get worse


def test_the_iteration_history_is_plotted_and_tabled(runs, tmp_path):
    gate = json.loads(runs.gate.read_text())
    base, cand = load_summary(runs.baseline), load_summary(runs.candidate)
    this = headline(3, "v2", base, cand, gate)
    side = SideHeadline(agent="x", pass_hat_k=0.2, pass_at_1=0.4, modes={"invention": 0.3, "misread": 0.1})
    earlier = [
        IterationHeadline(
            iteration=i,
            k=this.k,
            baseline=b,
            champion=side,
            candidate=side,
            gain=0.1,
            low=-0.02,
            high=0.2,
            confidence=0.95,
            mde=0.15,
            outcome=o,
            candidate_version=str(i),
            champion_moved=o == "promote",
        )
        for i, b, o in ((1, "embedded", "promote"), (2, "v1", "block"))
    ]
    out = build_report(
        runs.baseline,
        runs.candidate,
        runs.tasks,
        WORLD,
        gate_json=runs.gate,
        out=tmp_path / "r.html",
        history=[*earlier, this],
    )
    html_text = out.read_text()
    assert 'data-plot="iterations"' in html_text and (tmp_path / "plots" / "iterations.png").stat().st_size > 5000
    text = _text(html_text.split('id="iterations"')[1].split("</section>")[0])
    assert "1 embedded 20.0% 20.0% +10.0 pp [-2.0, +20.0 pp] +15.0 pp 40.0%" in text
    assert "promoted v1" in text and "2 v1" in text and "blocked" in text
    assert f"3 v2 {base.pass_hat_k[str(this.k)]:.1%} {cand.pass_hat_k[str(this.k)]:.1%} {pp(this.gain)}" in text
    assert f"{this.outcome} (this iteration)" in text
