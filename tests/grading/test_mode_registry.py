"""The failure modes live in one registry (`pipeline.grading.modes`): every consumer's list is the registry's, no
module holds a list of its own, and a mode's defaults reach the flawed agents, the target split and the gate."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.grading.modes import (
    BY_NAME,
    DUAL_CONTROL,
    FAILURE_MODES,
    LOOP_MODES,
    MODES,
    PRIORITY,
    FailureMode,
    mode_of_variant,
)

ROOT = Path(__file__).resolve().parents[2]


def test_every_consumer_lists_the_registry_s_modes():
    from pipeline.agents.scripted import flaws
    from pipeline.authoring import selection_kit
    from pipeline.domains.airline import synthesis as airline_synthesis
    from pipeline.domains.retail.synthesis import taxonomy as retail_taxonomy
    from pipeline.domains.telecom.flawed import PLANTED
    from pipeline.explore import kit as generic_kit
    from pipeline.gate.config import ACT_PASS_HAT_K, PASS_AT_1, TRACKABLE, GateConfig
    from pipeline.grading import dual_control, failure_modes
    from pipeline.report import plots
    from pipeline.target.config import DEFAULT_DIALS, TargetConfig

    assert tuple(m.name for m in MODES) == FAILURE_MODES and "inaction" in FAILURE_MODES
    for consumer in (
        flaws.MODES,
        selection_kit.MODES,
        generic_kit.ALL,
        retail_taxonomy.ALL,
        airline_synthesis.ALL,
        failure_modes.FAILURE_MODES,
        plots.FAILURE_MODES,
    ):
        assert tuple(consumer) == FAILURE_MODES
    assert set(failure_modes.PRIORITY) == set(FAILURE_MODES) and failure_modes.PRIORITY == PRIORITY
    assert set(flaws.default_rates()) == set(FAILURE_MODES)
    assert flaws.default_rates(0.5) == dict.fromkeys(FAILURE_MODES, 0.5)
    assert {m for m in PLANTED if m in BY_NAME} == set(FAILURE_MODES) - {"misread"}  # misread: wrong_instruction
    assert dual_control.PARENT == DUAL_CONTROL and set(DUAL_CONTROL.values()) <= set(FAILURE_MODES)
    assert (PASS_AT_1, ACT_PASS_HAT_K, *FAILURE_MODES) == TRACKABLE
    assert GateConfig().tracked == [PASS_AT_1, ACT_PASS_HAT_K, *LOOP_MODES]
    assert set(TargetConfig().weights) == set(LOOP_MODES) == set(DEFAULT_DIALS)
    assert all(DEFAULT_DIALS[m] == BY_NAME[m].dials for m in LOOP_MODES)


def test_the_plain_flawed_agent_and_rollout_plant_every_mode_at_its_default_rate():
    from pipeline.agents.registry import make_agent
    from pipeline.cli.rollout import scripted_agent
    from pipeline.world.registry import resolve_domain

    retail = resolve_domain("retail")
    assert make_agent("flawed", retail).config.rates == {m.name: m.flaw_rate for m in MODES}
    assert make_agent("flawed:inaction=0.4", retail).config.rates == {"inaction": 0.4}
    rollout = scripted_agent("flawed", 0.3, seed=1)
    assert rollout.default.config.rates == dict.fromkeys(FAILURE_MODES, 0.3)  # the default domain's agent


def test_a_mode_the_registry_lacks_is_refused_where_a_mode_is_named():
    from pydantic import TypeAdapter, ValidationError

    from pipeline.agents.scripted.flaws import FlawConfig
    from pipeline.target.split import TargetConfig

    assert TypeAdapter(FailureMode).validate_python("inaction") == "inaction"
    for bad in (
        lambda: TypeAdapter(FailureMode).validate_python("laziness"),
        lambda: FlawConfig(rates={"laziness": 0.2}),
        lambda: TargetConfig(weights={"laziness": 1.0}),
    ):
        with pytest.raises(ValidationError, match="laziness"):
            bad()
    assert FlawConfig(rates={"unverified_fix": 0.2}).rate("unverified_fix") == 0.2  # a dual-control mode plants


def test_each_mode_has_a_description_rules_a_priority_and_a_planted_flaw():
    assert len({m.priority for m in MODES}) == len(MODES)
    for m in MODES:
        assert m.description and m.rules and m.planted and m.variants, m.name
        assert all(mode_of_variant(v) == m.name for v in m.variants), m.name
        assert 0 <= m.flaw_rate <= 1 and m.weight >= 0
    assert PRIORITY[-1] == "inaction"  # the least specific explanation of a failure


def test_a_target_split_of_the_fourth_mode_works_when_weighted():
    from pipeline.target.split import TargetConfig, split_budget

    cfg = TargetConfig(weights=dict.fromkeys(FAILURE_MODES, 1.0), dials={"inaction": dict(BY_NAME["inaction"].dials)})
    out = split_budget({"inaction": 0.5, "misread": 0.1}, 20, cfg)
    assert set(out) == set(FAILURE_MODES) and sum(t.count for t in out.values()) == 20
    assert out["inaction"].count == max(t.count for t in out.values()) and out["inaction"].dials


_NAMES = re.compile(r"[\"'](plan_adherence|invention|misread|inaction)[\"']")
ALLOWED = {
    # the registry and the rules that name a mode when they find its evidence
    "pipeline/grading/modes.py",
    "pipeline/grading/mode_rules.py",
    "pipeline/grading/branches.py",
    "pipeline/grading/inaction.py",
    "pipeline/agents/scripted/flaws.py",
    # how each domain plants a mode's flaw (its variants, per mode)
    "pipeline/domains/retail/flawed.py",
    "pipeline/domains/airline/flawed.py",
    "pipeline/domains/telecom/flawed.py",
    "pipeline/explore/agents.py",
    # which templates exercise which mode (the domain's own judgement, per template)
    "pipeline/domains/retail/synthesis/taxonomy.py",
    "pipeline/domains/airline/synthesis.py",
    "pipeline/explore/kit.py",
    # the embedded corpus's situations (fixed: the corpus must not move)
    "pipeline/embedded/corpus.py",
    # an example headline's numbers
    "pipeline/metrics/headline.py",
}


def test_no_module_outside_the_registry_rules_and_planted_flaws_names_a_mode():
    """Adding a mode touches the registry, its rules and its planted flaw: nothing else spells a mode's name."""
    offenders = []
    for path in sorted((ROOT / "pipeline").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ALLOWED:
            continue
        for n, line in enumerate(path.read_text().splitlines(), start=1):
            code = line.split("#", 1)[0]
            if _NAMES.search(code) and '"""' not in line and ">>>" not in line:
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert offenders == []


@pytest.mark.parametrize("spec", ["retail", "tests.domains.toy.domain:TOY+generic"])
def test_tasks_are_synthesized_for_the_fourth_mode_when_it_is_weighted(spec):
    """A split that weights inaction gets tasks aimed at it, each one the flawed agent planting it fails."""
    from pipeline.synth.synthesize import SynthConfig, Synthesizer
    from pipeline.target import TargetConfig, Targets, split_budget
    from pipeline.world.registry import load_world

    cfg = TargetConfig(
        weights=dict.fromkeys(FAILURE_MODES, 1.0), dials={m: dict(BY_NAME[m].dials) for m in FAILURE_MODES}
    )
    targets = Targets(budget=12, modes=split_budget({"inaction": 0.5}, 12, cfg))
    result = Synthesizer(load_world("gen-7", spec), targets, SynthConfig(max_generations=2)).run()
    assert result.manifest["counts"]["by_mode"]["inaction"] >= 4
    assert result.manifest["flaw_check"]["inaction"] == {"detected": result.manifest["counts"]["by_mode"]["inaction"]}


FLOW = """
import dataclasses, importlib.util, json, sys

# the registry module on its own, with one more mode, in place before anything (grading's __init__ included) reads it
spec = importlib.util.spec_from_file_location("pipeline.grading.modes", "pipeline/grading/modes.py")
modes = importlib.util.module_from_spec(spec)
sys.modules["pipeline.grading.modes"] = modes
spec.loader.exec_module(modes)

extra = modes.ModeSpec(name="test_mode", description="a mode for this test only", rules=("never",), priority=9,
                       planted="nothing", variants=("test_variant",), dials={"pushback": 0.5})
modes.MODES = (*modes.MODES, extra)
modes.BY_NAME["test_mode"] = extra
modes.FAILURE_MODES = (*modes.FAILURE_MODES, "test_mode")
modes.PRIORITY = (*modes.PRIORITY, "test_mode")
modes.LOOP_MODES = (*modes.LOOP_MODES, "test_mode")

from pipeline.agents.scripted import flaws
from pipeline.domains.airline import synthesis as airline
from pipeline.domains.retail.synthesis import taxonomy as retail
from pipeline.explore import kit
from pipeline.gate.config import TRACKABLE, GateConfig
from pipeline.grading import failure_modes
from pipeline.metrics import summary
from pipeline.report import plots
from pipeline.authoring import selection_kit
from pipeline.target.split import TargetConfig

seen = {
    "flaws": list(flaws.MODES), "default_rates": sorted(flaws.default_rates()),
    "selection_kit": list(selection_kit.MODES),
    "generic_kit": list(kit.ALL), "retail_taxonomy": list(retail.ALL), "airline_taxonomy": list(airline.ALL),
    "failure_modes": list(failure_modes.FAILURE_MODES), "priority": list(failure_modes.PRIORITY),
    "metrics": list(summary.FAILURE_MODES), "report": list(plots.FAILURE_MODES), "gate": list(TRACKABLE),
    "gate_tracked": GateConfig().tracked, "target_weights": sorted(TargetConfig().weights),
    "target_dials": sorted(TargetConfig().dials), "flaw_config": sorted(flaws.FlawConfig(rates={"test_mode": 1}).rates),
}
print(json.dumps(seen))
"""


def test_a_mode_added_to_the_registry_alone_reaches_every_consumer():
    """A test-only entry, added before anything reads the registry, is in every consumer's list and defaults."""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", FLOW], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    seen = json.loads(out.strip().splitlines()[-1])
    assert {name for name, names in seen.items() if "test_mode" not in names} == set()
