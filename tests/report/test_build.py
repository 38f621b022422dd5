"""The HTML report: self-contained, every section present, flips explained by the call that changed the outcome."""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.report import ReportInputError, build_report
from pipeline.report.conversation import call_text
from pipeline.report.flips import find_flips
from pipeline.report.inputs import load_run
from tests.report.conftest import WORLD

SECTIONS = ("overview", "pass-k", "failure-modes", "cost", "buckets", "gate", "flips")
PLOTS = ("pass_hat_k", "failure_modes", "diff_categories", "cost_pareto", "buckets", "gate_interval")


class _Doc(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _parse(text: str) -> _Doc:
    doc = _Doc()
    doc.feed(text)
    return doc


def _assert_self_contained(text: str) -> _Doc:
    doc = _parse(text)
    names = {t for t, _ in doc.tags}
    assert not names & {"script", "link", "iframe", "object", "embed", "base"}, names
    for tag, attrs in doc.tags:
        for key in ("src", "href", "srcset", "action", "poster"):
            value = attrs.get(key)
            if value is not None:
                assert value.startswith(("data:image/png;base64,", "#")), (tag, key, value[:80])
    assert not re.search(r"url\(", text), "no CSS url() references"
    return doc


@pytest.fixture(scope="module")
def report(runs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    assert build_report(runs.baseline, runs.candidate, runs.tasks, WORLD, gate_json=runs.gate, out=out) == out
    return out


def test_self_contained_with_every_section_and_plot(report):
    text = report.read_text()
    doc = _assert_self_contained(text)
    assert "http://" not in text and "https://" not in text
    ids = {a.get("id") for _, a in doc.tags}
    assert set(SECTIONS) <= ids
    imgs = {a["data-plot"]: a["src"] for t, a in doc.tags if t == "img"}
    assert set(imgs) == set(PLOTS)
    for name in PLOTS:  # the same PNG is embedded and written for DVC / MLflow
        png = (report.parent / "plots" / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000
        assert base64.b64decode(imgs[name].removeprefix("data:image/png;base64,")) == png


def test_numbers_and_gate_decision(runs, report):
    text = report.read_text()
    base = json.loads((runs.baseline / "metrics.json").read_text())
    gate = json.loads(runs.gate.read_text())
    assert f"{base['pass_hat_k']['2']:.1%}" in text and f"{base['pass_at_k']['2']:.1%}" in text
    p = gate["pass_hat_k"]
    assert "PROMOTE" in text and f"[{p['low']:+.3f}, {p['high']:+.3f}]" in text
    for reason in gate["reasons"]:
        assert html.escape(reason) in text
    for mode in ("plan adherence", "invention", "misread", "missing change", "always", "flipping", "never"):
        assert mode in text


def _flip_html(text: str, task_id: str) -> str:
    start = text.index(f'data-task="{html.escape(task_id)}"')
    end = text.find('<div class="flip', start)
    return text[start : end if end > 0 else len(text)]


def test_each_flip_highlights_the_changed_tool_call(runs, report):
    text = report.read_text()
    flips = find_flips(load_run(runs.baseline), load_run(runs.candidate))
    assert flips and "task(s) fixed" in text
    kinds = set()
    for flip in flips:
        part = _flip_html(text, flip.task_id)
        d = flip.decisive
        assert d is not None
        kinds.add(d.kind)
        ref = d.failing or d.passing
        # the call is named in the summary box and outlined (class "decisive") inside the conversation
        assert f'class="call write decisive">{html.escape(call_text(ref.call))}</code>' in part
        assert "◆ decisive call" in part and "Decisive tool call:" in part
        for name, _, _ in d.arg_diffs:
            assert f"<td>{html.escape(name)}</td>" in part
        if d.kind == "missing_in_failing":
            assert "◆ no such call in this trial" in part
        for diff in flip.failing_verdict.diffs:  # the verdict's field diffs are shown with the flip
            assert html.escape(diff.path) in part
    assert len(kinds) >= 2, kinds


def test_no_flips_no_gate_still_renders(runs, tmp_path):
    out = build_report(runs.candidate, runs.candidate, runs.tasks, WORLD, out=tmp_path / "r.html")
    text = out.read_text()
    _assert_self_contained(text)
    assert "No task flipped" in text and "No gate.json was given" in text
    assert not (tmp_path / "plots" / "gate_interval.png").exists()
    assert (tmp_path / "plots" / "pass_hat_k.png").exists()


def test_regressions_are_shown_too(runs, tmp_path):
    text = build_report(runs.candidate, runs.baseline, runs.tasks, WORLD, out=tmp_path / "r.html").read_text()
    assert 'class="flip regressed"' in text and 'class="flip fixed"' not in text


def test_hostile_text_is_escaped(runs, tmp_path):
    evil = '<script>alert(1)</script><img src="https://evil.example/x.png">'
    run = tmp_path / "baseline"
    shutil.copytree(runs.baseline, run)
    lines = []
    for line in (run / "trajectories.jsonl").read_text().splitlines():
        row = json.loads(line)
        row["messages"][0]["content"] = evil
        lines.append(json.dumps(row))
    (run / "trajectories.jsonl").write_text("\n".join(lines) + "\n")
    text = build_report(run, runs.candidate, runs.tasks, WORLD, out=tmp_path / "r.html").read_text()
    assert "<script>" not in text and html.escape(evil) in text
    _assert_self_contained(text)


def test_same_inputs_same_bytes(runs, report, tmp_path):
    again = build_report(runs.baseline, runs.candidate, runs.tasks, WORLD, gate_json=runs.gate, out=tmp_path / "r.html")
    assert again.read_bytes() == report.read_bytes()


def test_bad_inputs_name_the_file(runs, tmp_path):
    with pytest.raises(ReportInputError, match="not a directory"):
        build_report(tmp_path / "nope", runs.candidate, runs.tasks, WORLD, out=tmp_path / "r.html")
    run = tmp_path / "run"
    shutil.copytree(runs.baseline, run)
    (run / "verdicts.jsonl").write_text("{not json\n")
    with pytest.raises(ReportInputError, match=r"verdicts.jsonl:1"):
        build_report(run, runs.candidate, runs.tasks, WORLD, out=tmp_path / "r.html")


def test_cli_report_with_extra_agent(runs, tmp_path):
    extra = tmp_path / "pricey"
    extra.mkdir()
    metrics = json.loads((runs.baseline / "metrics.json").read_text())
    metrics["agent"] = "pricey-model"
    metrics["cost"]["cost_per_success"] = 0.5
    (extra / "metrics.json").write_text(json.dumps(metrics))
    out = tmp_path / "site" / "report.html"
    args = [
        "report",
        "--baseline",
        str(runs.baseline),
        "--candidate",
        str(runs.candidate),
        "--tasks",
        str(runs.tasks),
        "--world",
        WORLD,
        "--gate",
        str(runs.gate),
        "--extra",
        str(extra),
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    text = out.read_text()
    _assert_self_contained(text)
    rows = re.findall(
        r"<tr><td>(baseline|candidate|pricey-model)</td><td>[^<]*</td><td>([^<]*)</td><td>[^<]*</td>"
        r"<td>([^<]*)</td></tr>",
        text,
    )
    assert sorted(rows) == [
        ("baseline", "0.0000", "no"),
        ("candidate", "0.0000", "yes"),
        ("pricey-model", "0.5000", "no"),
    ]
    bad = CliRunner().invoke(app, [*args[:2], str(tmp_path / "missing"), *args[3:]])
    assert bad.exit_code == 2 and "not a directory" in bad.output


@pytest.mark.parametrize("keep", [0, 7])
def test_an_empty_or_truncated_trajectories_file_is_refused(runs, tmp_path, keep):
    run = tmp_path / "candidate"
    shutil.copytree(runs.candidate, run)
    lines = (run / "trajectories.jsonl").read_text().splitlines(keepends=True)
    (run / "trajectories.jsonl").write_text("".join(lines[:keep]))
    with pytest.raises(ReportInputError, match=rf"trajectories.jsonl: {keep} trials, but metrics.json counts 15 tasks"):
        build_report(runs.baseline, run, runs.tasks, WORLD, gate_json=runs.gate, out=tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


def test_verdicts_of_other_trials_are_refused(runs, tmp_path):
    run = tmp_path / "candidate"
    shutil.copytree(runs.candidate, run)
    rows = [json.loads(line) for line in (run / "verdicts.jsonl").read_text().splitlines()]
    rows[0]["verdict"]["trial"] = 99
    (run / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ReportInputError, match="hold different trials"):
        build_report(runs.baseline, run, runs.tasks, WORLD, out=tmp_path / "r.html")


def test_a_gate_file_about_another_run_is_refused(runs, tmp_path):
    with pytest.raises(ReportInputError, match="the gate decided on another candidate file"):  # gate: oracle vs flawed
        build_report(runs.candidate, runs.baseline, runs.tasks, WORLD, gate_json=runs.gate, out=tmp_path / "r.html")
    gate = json.loads(runs.gate.read_text())
    gate["inputs"]["tasks_sha256"] = "0" * 64
    (other := tmp_path / "gate.json").write_text(json.dumps(gate))
    with pytest.raises(ReportInputError, match="another tasks file"):
        build_report(runs.baseline, runs.candidate, runs.tasks, WORLD, gate_json=other, out=tmp_path / "r.html")


def test_runs_measured_on_different_task_sets_are_refused(runs, tmp_path):
    from pipeline.measure import MeasureConfig, measure
    from pipeline.report import ReportInputError

    fewer = tmp_path / "tasks.jsonl"
    fewer.write_text("".join(runs.tasks.read_text().splitlines(keepends=True)[:3]))
    measure(MeasureConfig(world=WORLD, tasks=fewer, agent="oracle", trials=2, resamples=50), tmp_path / "cand")
    with pytest.raises(ReportInputError, match=r"different task sets \(\d+ task\(s\) only in the baseline"):
        build_report(runs.baseline, tmp_path / "cand", runs.tasks, WORLD, out=tmp_path / "r.html")
    other = tmp_path / "other.jsonl"
    other.write_text(runs.tasks.read_text().splitlines(keepends=True)[-1])
    with pytest.raises(ReportInputError, match=r"3 measured task\(s\) are not in this task file"):
        build_report(tmp_path / "cand", tmp_path / "cand", other, WORLD, out=tmp_path / "r.html")
