"""`agentloop export tau2-submission`: pass^1..4 from a run's verdicts, the methodology, and the written file checked
against the leaderboard's documented submission format (τ²-bench's submission guide: required and optional
fields, pass_k as percentages 0-100 or null, no fields of our own)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.dataset import file_sha256
from pipeline.tau2.submission import SubmissionError, build_submission, summarize_run

_NUM = {"anyOf": [{"type": "number", "minimum": 0, "maximum": 100}, {"type": "null"}]}
_STR = {"anyOf": [{"type": "string"}, {"type": "null"}]}
_BOOL = {"anyOf": [{"type": "boolean"}, {"type": "null"}]}
_DOMAIN = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        **{f"pass_{k}": _NUM for k in range(1, 5)},
        "cost": {"anyOf": [{"type": "number", "minimum": 0}, {"type": "null"}]},
        "retrieval_config": _STR,
    },
}
# the format as the leaderboard's submission guide documents it, written out for this test
LEADERBOARD_FORMAT = {
    "type": "object",
    "required": [
        "model_name",
        "model_organization",
        "submitting_organization",
        "submission_date",
        "contact_info",
        "results",
    ],
    "additionalProperties": False,
    "properties": {
        "model_name": {"type": "string"},
        "model_organization": {"type": "string"},
        "submitting_organization": {"type": "string"},
        "submission_date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "submission_type": {"enum": ["standard", "custom"]},
        "modality": {"enum": ["text", "voice"]},
        "contact_info": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"email": _STR, "name": _STR, "github": _STR},
        },
        "results": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                d: {"anyOf": [_DOMAIN, {"type": "null"}]} for d in ("retail", "airline", "telecom", "banking_knowledge")
            },
        },
        "is_new": {"type": "boolean"},
        "trajectories_available": {"type": "boolean"},
        "trajectory_files": {
            "anyOf": [{"type": "object", "additionalProperties": {"type": "string"}}, {"type": "null"}]
        },
        "references": {"type": "array"},
        "methodology": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "evaluation_date": {"anyOf": [{"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}, {"type": "null"}]},
                "tau2_bench_version": _STR,
                "user_simulator": _STR,
                "notes": _STR,
                "verification": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"modified_prompts": _BOOL, "omitted_questions": _BOOL, "details": _STR},
                },
            },
        },
    },
}


def _world_of(domain: str):
    from pipeline.world import load_world
    from tests.needs import need_tau2

    return load_world(str(need_tau2(domain)))


def _run(
    tmp_path,
    name: str,
    domain: str,
    outcomes: dict[str, list[bool | None]],
    user: str = "tau2-llm:gpt-4.1",
    *,
    world=None,
    agent: str = "openai:my-model",
    settings: dict | None = None,
):
    """A run directory as measure writes it: trajectories, verdicts, the agent's settings (usage.json) and the
    record of the world it was measured in (provenance.json; τ²-bench's world of `domain` unless `world`)."""
    from pipeline.dataset import provenance_text
    from pipeline.dataset.provenance import Provenance

    d = tmp_path / name
    d.mkdir()
    trajs, verdicts = [], []
    for task, trials in outcomes.items():
        for i, ok in enumerate(trials):
            end = f"{domain}-{task}-{i}"
            trajs.append(
                {"task_id": task, "trial": i, "agent": agent, "user": user, "domain": domain, "final_hash": end}
            )
            tau2 = None if ok is None else {"passed": ok, "reward": float(ok)}
            v = {"task_id": task, "trial": i, "passed": bool(ok), "infra_error": ok is None, "tau2": tau2}
            verdicts.append({"verdict": {**v, "final_hash": end}, "analysis": None})
    (d / "trajectories.jsonl").write_text("".join(json.dumps(t) + "\n" for t in trajs))
    (d / "verdicts.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    agent_settings = {"kind": "openai", "model": "my-model"} if settings is None else settings
    (d / "usage.json").write_text(json.dumps({"agent": {"settings": agent_settings}, "user": {"settings": {}}}))
    world = world or _world_of(domain)
    record = Provenance(
        domain=world.domain.name,
        world=world.name,
        world_digest=world.fingerprint,
        tasks_sha256="0" * 64,
        trajectories_sha256=file_sha256(d / "trajectories.jsonl"),
    )
    (d / "provenance.json").write_text(provenance_text(record))
    return d


def test_pass_hat_k_per_domain_from_the_verdicts(tmp_path):
    run = _run(
        tmp_path, "r", "retail", {"a": [True, True, False, True], "b": [True] * 4, "c": [True, None, True, True, True]}
    )
    s = summarize_run(run)
    # a: c=3 of 4; b: 4 of 4; c: 4 of 4 valid (the infrastructure error left out)
    assert s.results.pass_1 == round(100 * (0.75 + 1 + 1) / 3, 2)
    assert s.results.pass_2 == round(100 * (0.5 + 1 + 1) / 3, 2)
    assert s.results.pass_4 == round(100 * (0 + 1 + 1) / 3, 2)
    short = summarize_run(_run(tmp_path, "s", "airline", {"a": [True, False]}))
    assert (short.results.pass_1, short.results.pass_2, short.results.pass_3) == (50.0, 0.0, None)


def test_the_written_submission_follows_the_leaderboard_format(tmp_path):
    runs = [
        _run(tmp_path, "retail", "retail", {"0": [True] * 4, "1": [False, True, True, True]}),
        _run(tmp_path, "airline", "airline", {"0": [True, False, False, False]}),
        _run(tmp_path, "telecom", "telecom", {"x": [True] * 4}),
    ]
    out = tmp_path / "submission.json"
    args = ["export", "tau2-submission", "--out", str(out), "--model-organization", "Lab", "--submitting-organization"]
    args += ["Lab", "--contact-email", "team@example.org"]
    for r in runs:
        args += ["--run", str(r)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    jsonschema.validate(data, LEADERBOARD_FORMAT)
    assert set(data["results"]) == {"retail", "airline", "telecom"}
    assert data["results"]["airline"] == {"pass_1": 25.0, "pass_2": 0.0, "pass_3": 0.0, "pass_4": 0.0}
    assert data["model_name"] == "my-model" and data["methodology"]["user_simulator"] == "gpt-4.1"
    notes = data["methodology"]["notes"]
    assert "τ²-compatible reward and strict verdict agree on" in notes and "base tasks not run" in notes
    assert data["methodology"]["verification"]["omitted_questions"] is True
    broken = {**data, "results": {"retail": {"pass_1": 140}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, LEADERBOARD_FORMAT)


def test_an_imported_run_reports_agreement_with_the_recorded_reward(tmp_path):
    run = _run(tmp_path, "t", "telecom", {"x": [True, True]})
    (run / "tau2_import.json").write_text(json.dumps({"upstream_agreement": 2, "upstream_rewards": 2}))
    assert "equals the reward τ²-bench recorded on 2 of 2 trials" in summarize_run(run).agreement


@pytest.mark.parametrize(
    ("runs", "message"),
    [
        ({"a": ("retail", "tau2-llm:gpt-4.1"), "b": ("retail", "tau2-llm:gpt-4.1")}, "a second run of retail"),
        ({"a": ("retail", "tau2-llm:gpt-4.1"), "b": ("airline", "scripted")}, "different users"),
    ],
)
def test_runs_that_cannot_make_one_submission_are_refused(tmp_path, runs, message):
    dirs = [_run(tmp_path, n, d, {"0": [True]}, user=u) for n, (d, u) in runs.items()]
    with pytest.raises(SubmissionError, match=message):
        build_submission(dirs, model_name=None, model_organization="L", submitting_organization="L")


def test_a_trial_without_the_tau2_reward_is_named(tmp_path):
    run = _run(tmp_path, "r", "retail", {"0": [True]})
    lines = [json.loads(x) for x in (run / "verdicts.jsonl").read_text().splitlines()]
    lines[0]["verdict"]["tau2"] = None
    (run / "verdicts.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(SubmissionError, match=r"verdicts.jsonl: line 1: field verdict.tau2"):
        summarize_run(run)
    assert summarize_run(run, verdict="strict").results.pass_1 == 100.0
    result = CliRunner().invoke(
        app,
        ["export", "tau2-submission", "--run", str(run), "--out", str(tmp_path / "s.json")]
        + ["--model-organization", "L", "--submitting-organization", "L"],
    )
    assert result.exit_code == 2 and "use --verdict strict" in result.output


def test_a_full_disk_leaves_the_existing_submission_intact(tmp_path, monkeypatch):
    import errno
    import os

    import click

    run = _run(tmp_path, "retail", "retail", {"0": [True] * 4})
    out = tmp_path / "submission.json"
    args = ["export", "tau2-submission", "--out", str(out), "--model-organization", "Lab", "--submitting-organization"]
    args += ["Lab", "--contact-email", "team@example.org", "--run", str(run)]
    assert CliRunner().invoke(app, args).exit_code == 0
    before = out.read_bytes()
    json.loads(before)

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", no_space)
    result = CliRunner().invoke(app, [*args[:-2], "--run", str(run), "--model-organization", "Other"])
    output = click.unstyle(result.output)
    assert result.exit_code == 2, output
    assert "Traceback" not in output and "submission.json could not be written: No space left on device" in output
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def _export(tmp_path, *runs, extra=()):
    args = ["export", "tau2-submission", "--out", str(tmp_path / "s.json"), "--model-organization", "Lab"]
    args += ["--submitting-organization", "Lab", *extra]
    for r in runs:
        args += ["--run", str(r)]
    return CliRunner().invoke(app, args)


def test_a_run_in_another_world_than_tau2_benchs_is_refused(tmp_path):
    from pipeline.world import load_world

    run = _run(tmp_path, "gen", "retail", {"0": [True]}, world=load_world("gen-3-4x10x20"))
    result = _export(tmp_path, run)
    assert result.exit_code == 2 and "field world: measured in world 'gen-3-4x10x20'" in result.output
    assert "not τ²-bench's retail world" in " ".join(result.output.split())
    assert not (tmp_path / "s.json").exists()
    # a run without any record of its world is refused too (it cannot be told from one in a generated world)
    bare = _run(tmp_path, "bare", "retail", {"0": [True]})
    (bare / "provenance.json").unlink()
    assert "no record of the world it was measured in" in " ".join(_export(tmp_path, bare).output.split())


def test_verdicts_of_another_domain_are_refused(tmp_path):
    retail = _run(tmp_path, "retail", "retail", {"0": [True, False]})
    airline = _run(tmp_path, "airline", "airline", {"0": [True, True]})
    (retail / "verdicts.jsonl").write_bytes((airline / "verdicts.jsonl").read_bytes())
    with pytest.raises(SubmissionError, match=r"verdicts.jsonl: line 1: field verdict.final_hash"):
        summarize_run(retail)
    # the domain its trajectories claim must be the one its record says it was measured in
    claimed = _run(tmp_path, "claimed", "retail", {"0": [True]}, world=_world_of("airline"))
    result = _export(tmp_path, claimed)
    assert result.exit_code == 2 and "field domain: measured in domain 'airline'" in result.output


def test_the_model_name_comes_from_the_agents_settings_never_its_label(tmp_path):
    flawed = _run(
        tmp_path, "flawed", "retail", {"0": [True]}, agent="flawed(invention=0.2,seed=0)", settings={"spec": "flawed"}
    )
    result = _export(tmp_path, flawed)
    assert result.exit_code == 2 and "--model-name: the agent 'flawed(invention=0.2,seed=0)' records no model" in (
        " ".join(result.output.split())
    )
    assert _export(tmp_path, flawed, extra=["--model-name", "Scripted"]).exit_code == 0
    assert json.loads((tmp_path / "s.json").read_text())["model_name"] == "Scripted"
    labelled = _run(
        tmp_path, "labelled", "retail", {"0": [True]}, agent="openai:alias", settings={"kind": "openai", "model": "m-1"}
    )
    assert _export(tmp_path, labelled).exit_code == 0
    assert json.loads((tmp_path / "s.json").read_text())["model_name"] == "m-1"


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda v: v["verdict"].pop("passed"), "line 1: field verdict.passed: Field required"),
        (lambda v: v.update(verdict=[1]), "line 1: field verdict: expected an object"),
        (lambda v: v["verdict"].update(tau2={"reward": 1}), "line 1: field verdict.tau2.passed"),
    ],
)
def test_a_verdict_missing_what_the_export_reads_is_named(tmp_path, edit, needle):
    run = _run(tmp_path, "r", "retail", {"0": [True]})
    rows = [json.loads(x) for x in (run / "verdicts.jsonl").read_text().splitlines()]
    edit(rows[0])
    (run / "verdicts.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows))
    result = _export(tmp_path, run)
    assert result.exit_code == 2 and needle in " ".join(result.output.split()), result.output
