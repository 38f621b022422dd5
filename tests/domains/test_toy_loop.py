"""A domain only the tests know (tests/domains/toy, a fitness studio), named as module:attribute, runs through
measure, target, synthesize, curate and gate by the public commands alone: nothing generic names it."""

from __future__ import annotations

import json
import pickle
import time

import pytest
from typer.testing import CliRunner

from pipeline.authoring.kit import SynthesisKitError, check_kit
from pipeline.cli import app
from pipeline.dataset.io import read_tasks
from pipeline.synth.config import SynthConfig
from pipeline.synth.synthesize import Synthesizer
from pipeline.target import Targets, split_budget
from pipeline.world.domain import DomainCapabilityError
from pipeline.world.registry import domain_spec, resolve_domain
from pipeline.world.tables import World
from pipeline.world.tools import ToolRegistry
from tests.domains.toy.domain import StudioDomain
from tests.domains.toy.synthesis import KIT, StudioKit

SPEC = "tests.domains.toy.domain:TOY"
BASELINE = "flawed:invention=0.4,misread=0.3,plan_adherence=0.2"


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--domain", SPEC])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_loop_runs_on_a_domain_from_outside(tmp_path):
    start = time.monotonic()
    eval_tasks, base, cand = tmp_path / "eval.jsonl", tmp_path / "baseline", tmp_path / "candidate"
    _run("tasks", "generate", "--world", "gen-101", "--n", "16", "--out", str(eval_tasks))
    for agent, out in ((BASELINE, base), ("oracle", cand)):
        _run("measure", "--world", "gen-101", "--tasks", str(eval_tasks), "--agent", agent, "--trials", "2",
             "--out", str(out))  # fmt: skip
    recorded = {json.loads(line)["domain"] for line in (base / "trajectories.jsonl").read_text().splitlines()}
    assert recorded == {SPEC}  # resolvable in any process, unlike the domain's bare name
    targets = tmp_path / "targets.json"
    args = ["target", "--metrics", str(base / "metrics.json"), "--budget", "12", "--out", str(targets)]
    _run(*args, "--verdicts", str(base / "verdicts.jsonl"), "--tasks", str(eval_tasks))
    split = Targets.read(targets)
    assert sum(t.count for t in split.modes.values()) >= 12
    cells = {c.split("/")[0] for by_cell in split.cells.values() for c in by_cell}
    assert cells and cells <= set(KIT.taxonomy)  # the studio's templates, from its kit

    synth = tmp_path / "synth"
    _run("synthesize", "--world", "gen-7", "--targets", str(targets), "--out", str(synth), "--generations", "3")
    tasks = read_tasks(synth / "tasks.jsonl")
    manifest = json.loads((synth / "manifest.json").read_text())
    assert len(tasks) == manifest["tasks"] >= 12
    assert {t.provenance.template for t in tasks if t.provenance.depth == 0} == set(KIT.taxonomy)
    assert max(t.provenance.depth for t in tasks) >= 1 and manifest["counts"]["by_outcome"].get("refused")
    assert manifest["flaw_check"] and all(t.world == "gen-7" for t in tasks)

    curated = tmp_path / "curated"
    _run("curate", "--pool", str(synth / "trajectories.jsonl"), "--tasks", str(synth / "tasks.jsonl"), "--world",
         "gen-7", "--agent", BASELINE, "--probes", "1", "--out", str(curated))  # fmt: skip
    assert json.loads((curated / "manifest.json").read_text())["pool"]["verified"] == len(tasks)

    gate = tmp_path / "gate.json"
    _run("gate", "--candidate", str(cand), "--champion", str(base), "--tasks", str(eval_tasks), "--world", "gen-101",
         "--k", "2", "--resamples", "300", "--out", str(gate))  # fmt: skip
    decision = json.loads(gate.read_text())
    assert decision["pass_hat_k"]["candidate"] == 1.0 > decision["pass_hat_k"]["champion"]
    assert decision["outcome"] == "promote"
    assert time.monotonic() - start < 120


def test_the_kit_is_checked_against_the_domains_tools():
    domain = resolve_domain(SPEC)
    check_kit(domain, KIT)
    lacking = StudioKit()
    lacking.templates = {k: v for k, v in KIT.templates.items() if k != "change_zip"}
    with pytest.raises(SynthesisKitError, match=f"domain '{SPEC}' synthesis kit: templates \\['change_zip'\\]"):
        check_kit(domain, lacking)


class _NoKit(StudioDomain):
    name = "nokit"

    def synthesis(self):
        return None


class _NoIdentity(_NoKit):
    name = "noidentity"
    tools = ToolRegistry()


def test_a_domain_without_synthesis_gets_the_generic_kit_or_says_why_not():
    from pipeline.explore.generic_kit import GenericKit

    assert isinstance(_NoKit().require("synthesis"), GenericKit)  # grown from its tools and worlds
    with pytest.raises(DomainCapabilityError, match="domain 'noidentity' does not provide 'synthesis'"):
        Synthesizer(
            _generated(_NoIdentity()), Targets(budget=2, modes=split_budget({"invention": 0.5}, 2)), SynthConfig()
        )


def _generated(domain):
    """An empty world of the domain under a generated world's name (synthesis refuses any other)."""
    return World({t: {} for t in domain.tables}, domain.policy(), "gen-1", domain)


def test_a_world_travels_with_its_domain_by_spec():
    """Pickled to a Ray worker, the world's domain comes back as the registered one, and names itself the same."""
    world = resolve_domain(SPEC).load("gen-3")
    again = pickle.loads(pickle.dumps(world))
    assert again.domain is resolve_domain(SPEC) and domain_spec(again.domain) == SPEC
    assert resolve_domain("studio") is resolve_domain(SPEC)  # its name, once resolved, resolves too


def test_the_dvc_stages_run_on_it_named_in_params(tmp_path, monkeypatch):
    """The stage functions dvc.yaml runs, with `world.domain` a module:attribute and scripted agents for models."""
    from pipeline.loop import paths, stages
    from pipeline.loop.params import Params

    monkeypatch.chdir(tmp_path)
    p = Params.model_validate(
        {
            "world": {"eval_tasks": 16, "domain": SPEC},
            "baseline": {"source": f"agent:{BASELINE}"},
            "measure": {"trials": 2, "executor": "serial", "resamples": 200},
            "target": {"budget": 12},
            "synthesize": {"config": {"max_generations": 3}, "anchors": 4},
            "curate": {"probes": 1, "executor": "serial"},
            "train": {"method": "agent:oracle"},
            "gate": {"k": 2, "resamples": 300},
        }
    )
    assert stages.make_eval_tasks(p) == 16
    stages.build_baseline(p)
    stages.measure_baseline(p)
    assert stages.make_targets(p).cells  # cells in the studio's taxonomy
    assert len(stages.synthesize(p).tasks) >= 12 and len(paths.ANCHORS.read_text().splitlines()) == 4
    assert stages.curate(p)["pool"]["verified"] >= 12
    stages.train_candidate(p)
    stages.remeasure_candidate(p)
    assert stages.gate(p).promote


def test_templates_are_called_with_five_arguments_by_every_path():
    """A kit whose templates take `want` without a default (as documented) runs in plain generation, pairs
    included, and in synthesis."""
    from pipeline.authoring.templates import generate_tasks

    calls: list[int] = []

    def strict(template):
        def f(ctx, customer, rng, exclude, want):
            calls.append(5)
            return template(ctx, customer, rng, exclude, want)

        return f

    class StrictKit(StudioKit):
        templates = {name: strict(t) for name, t in KIT.templates.items()}

    class StrictStudio(StudioDomain):
        def synthesis(self):
            return STRICT_KIT

    STRICT_KIT = StrictKit()
    domain = StrictStudio()
    from tests.domains.toy.domain import generate

    world = generate(3)
    world = World({t: world.table(t) for t in world.table_names}, policy=world.policy, name="gen-3", domain=domain)
    tasks = generate_tasks(world, 12, seed=0)  # the cycle holds two-request tasks
    assert len(tasks) == 12 and any(len(t.user_script.requests) == 2 for t in tasks) and calls
