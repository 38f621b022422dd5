"""What the gate could have seen: the MDE's math, and promote / block / inconclusive on constructed tables."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from pydantic import ValidationError

from pipeline.gate import GateConfig, TaskOutcome, evaluate, read_gate
from pipeline.gate.decision import GateDecision
from pipeline.gate.power import mde, tasks_needed, z_sum

ROOT = Path(__file__).resolve().parents[2]
NO_TESTS = dict(tracked=[])  # the pass^k rule alone


def _binomial_tables(n: int, p_cand: float, p_champ: float, seed: int, trials: int = 1):
    """n single-template-free tasks, each with `trials` Bernoulli trials per agent at a common rate."""
    rng = random.Random(seed)

    def draw(p: float) -> TaskOutcome:
        return TaskOutcome(template=None, n=trials, passes=sum(rng.random() < p for _ in range(trials)))

    cand = {f"t{i:04d}": draw(p_cand) for i in range(n)}
    champ = {f"t{i:04d}": draw(p_champ) for i in range(n)}
    return cand, champ


def _replicate(table: dict[str, TaskOutcome], times: int) -> dict[str, TaskOutcome]:
    """The same tasks `times` over, each copy with its own template names: tasks drawn like these, more of them."""
    return {
        f"{t}#{r}": TaskOutcome(
            template=None if o.template is None else f"{o.template}#{r}", n=o.n, passes=o.passes, modes=o.modes
        )
        for r in range(times)
        for t, o in table.items()
    }


def _tables(rows: list[tuple[str, int, int]]) -> dict[str, TaskOutcome]:
    """(template, n, passes) rows as a table."""
    return {f"t{i:03d}": TaskOutcome(template=tpl, n=n, passes=c) for i, (tpl, n, c) in enumerate(rows)}


def test_z_sum_and_formula():
    assert z_sum(0.95, 0.8) == pytest.approx(1.959964 + 0.841621, abs=1e-5)
    assert z_sum(0.90, 0.9) == pytest.approx(1.644854 + 1.281552, abs=1e-5)
    assert mde(0.04, 0.02, 0.95, 0.8) == pytest.approx(0.02 + 2.801585 * 0.04, abs=1e-5)
    assert tasks_needed(50, 0.0, 0.1, 0.95, 0.8) is None


def test_mde_matches_the_binomial_formula():
    # k=1, one trial per task, no templates: the paired difference per task has variance p1(1−p1) + p0(1−p0),
    # so SE = sqrt(that / n) and MDE = (z_.975 + z_.8) · SE.
    n, p1, p0 = 400, 0.6, 0.5
    cand, champ = _binomial_tables(n, p1, p0, seed=1)
    phk = evaluate(cand, champ, GateConfig(k=1, **NO_TESTS)).pass_hat_k
    se = math.sqrt((p1 * (1 - p1) + p0 * (1 - p0)) / n)
    assert phk.se == pytest.approx(se, rel=0.08)
    assert phk.mde == pytest.approx(2.8016 * se, rel=0.08)
    # and exactly the spread of this sample's per-task differences (bootstrap noise only)
    d = [cand[t].passes - champ[t].passes for t in cand]
    mean = sum(d) / n
    sample_se = math.sqrt(sum((x - mean) ** 2 for x in d) / n / n)
    assert phk.se == pytest.approx(sample_se, rel=0.05)
    assert phk.tasks_needed == math.ceil(n * (z_sum(0.95, 0.8) * phk.se / 0.10) ** 2 - 1e-9)


def test_mde_falls_with_tasks_as_one_over_sqrt_n():
    cand, champ = _binomial_tables(60, 0.7, 0.6, seed=2, trials=4)
    for t in cand:  # templates shared by three tasks each: the clustered case
        cand[t] = TaskOutcome(template=f"tpl{int(t[1:]) % 20}", n=4, passes=cand[t].passes)
        champ[t] = TaskOutcome(template=f"tpl{int(t[1:]) % 20}", n=4, passes=champ[t].passes)
    config = GateConfig(**NO_TESTS)
    mdes = [evaluate(_replicate(cand, r), _replicate(champ, r), config).pass_hat_k.mde for r in (1, 2, 4, 8)]
    assert mdes == sorted(mdes, reverse=True) and len(set(mdes)) == 4
    assert mdes[2] / mdes[0] == pytest.approx(0.5, rel=0.12)  # 4× the tasks, half the MDE
    assert mdes[3] / mdes[0] == pytest.approx(1 / math.sqrt(8), rel=0.12)


def test_tasks_needed_is_where_the_mde_reaches_the_effect():
    cand, champ = _binomial_tables(40, 0.65, 0.6, seed=3, trials=4)
    config = GateConfig(**NO_TESTS)
    first = evaluate(cand, champ, config)
    assert first.outcome == "inconclusive" and first.pass_hat_k.mde > 0.10
    needed = first.pass_hat_k.tasks_needed
    times = math.ceil(needed / 40)
    bigger = evaluate(_replicate(cand, times), _replicate(champ, times), config).pass_hat_k
    assert bigger.mde <= 0.10 * 1.08  # at the promised size the gate sees min_effect (bootstrap noise aside)
    smaller = evaluate(_replicate(cand, max(1, times // 3)), _replicate(champ, max(1, times // 3)), config).pass_hat_k
    assert smaller.mde > 0.10


@pytest.mark.slow
def test_a_true_gain_of_the_mde_is_promoted_at_the_stated_power():
    n, p0 = 200, 0.5
    target = 2.8016 * math.sqrt(2 * p0 * (1 - p0) / n)  # analytic MDE at equal variances
    p1 = p0 + target
    config = GateConfig(k=1, resamples=400, **NO_TESTS)
    sims = 150
    promoted = sum(evaluate(*_binomial_tables(n, p1, p0, seed=100 + s), config).promote for s in range(sims))
    assert 0.68 <= promoted / sims <= 0.92  # power 0.8 ± 3.5 binomial SDs


def test_three_outcomes_on_constructed_tables():
    config = GateConfig(**NO_TESTS)
    cand, champ = _binomial_tables(30, 0.6, 0.6, seed=8, trials=4)  # one agent twice, 30 tasks: noise only
    noisy = evaluate(cand, champ, config)
    p = noisy.pass_hat_k
    assert p.low <= 0.0 < p.high and p.mde > 0.10
    assert noisy.outcome == "inconclusive" and not noisy.promote
    assert p.tasks_needed > len(cand)
    assert any(r.startswith("inconclusive") and f"about {p.tasks_needed} held-out tasks" in r for r in noisy.reasons)
    # the same straddle when only a larger effect matters: the gate could have seen it, so it blocks
    assert evaluate(cand, champ, GateConfig(min_effect=0.9, **NO_TESTS)).outcome == "block"
    # a clear loss blocks whatever the MDE
    loss = evaluate(_tables([("a", 4, 0)] * 6), _tables([("a", 4, 4)] * 6), config)
    assert loss.pass_hat_k.high <= 0.0 and loss.outcome == "block"
    # a clear win promotes
    win = evaluate(_tables([("a", 4, 4), ("b", 4, 4)] * 10), _tables([("a", 4, 0), ("b", 4, 1)] * 10), config)
    assert win.outcome == "promote" and win.promote
    # identical runs: no spread, so nothing to say what it could have seen — inconclusive, never a block
    same = evaluate(cand, cand, config)
    assert (same.pass_hat_k.se, same.pass_hat_k.mde, same.pass_hat_k.tasks_needed) == (0.0, None, None)
    assert same.outcome == "inconclusive"


def test_zero_spread_is_no_finding():
    """8 tasks × 1 trial, the candidate passing exactly the champion's one task: se 0 is not an MDE of 0."""
    config = GateConfig(k=1, **NO_TESTS)
    rows = [(f"tpl{i}", 1, int(i == 0)) for i in range(8)]
    tie = evaluate(_tables(rows), _tables(rows), config)
    p = tie.pass_hat_k
    assert (p.se, p.mde, p.tasks_needed, tie.outcome, tie.promote) == (0.0, None, None, "inconclusive", False)
    assert any(r.startswith("inconclusive: the standard error is 0") and "no finding" in r for r in tie.reasons)
    assert not any("minimum detectable pass^1 effect +0.000" in r for r in tie.reasons)
    # every task gained alike: a finding only when enough tasks did (the sign test's bound)
    few_before, few_after = _tables([("a", 1, 0), ("b", 1, 0)]), _tables([("a", 1, 1), ("b", 1, 1)])
    assert evaluate(few_after, few_before, config).outcome == "inconclusive"
    many_before = _tables([(f"tpl{i}", 1, 0) for i in range(8)])
    many_after = _tables([(f"tpl{i}", 1, 1) for i in range(8)])
    many = evaluate(many_after, many_before, config)
    assert many.outcome == "promote" and many.pass_hat_k.mde is None
    assert any("the standard error is 0" in r for r in many.reasons)
    # a uniform loss still blocks, however few the clusters
    assert evaluate(many_before, many_after, config).outcome == "block"
    assert evaluate(few_before, few_after, config).outcome == "block"


def test_many_tasks_turn_the_same_straddle_into_a_block():
    cand, champ = _binomial_tables(1600, 0.62, 0.6, seed=4, trials=4)
    result = evaluate(cand, champ, GateConfig(resamples=500, **NO_TESTS))
    p = result.pass_hat_k
    assert p.low <= 0.0 < p.high  # still no demonstrated gain ...
    assert p.mde <= 0.10 and result.outcome == "block"  # ... but a +0.10 gain would have shown
    assert p.tasks_needed < 1600


def test_a_regression_blocks_an_underpowered_straddle():
    base, champ = _binomial_tables(30, 0.6, 0.6, seed=8, trials=4)
    cand = {  # the same noisy pair, the candidate now misreading on every failed trial
        t: TaskOutcome(template=o.template, n=o.n, passes=o.passes, modes={"misread": o.n - o.passes})
        for t, o in base.items()
    }
    assert evaluate(cand, champ, GateConfig(**NO_TESTS)).outcome == "inconclusive"
    result = evaluate(cand, champ, GateConfig(tracked=["misread"]))
    assert any(t.worse for t in result.tests) and result.outcome == "block"


def test_margin_and_power_move_the_mde():
    cand, champ = _binomial_tables(80, 0.6, 0.6, seed=5, trials=4)
    base = evaluate(cand, champ, GateConfig(**NO_TESTS)).pass_hat_k
    shifted = evaluate(cand, champ, GateConfig(margin=0.05, **NO_TESTS)).pass_hat_k
    powerful = evaluate(cand, champ, GateConfig(power=0.95, **NO_TESTS)).pass_hat_k
    assert shifted.mde == pytest.approx(base.mde + 0.05, abs=1e-6)
    assert powerful.mde > base.mde and powerful.tasks_needed > base.tasks_needed
    with pytest.raises(ValidationError, match="power"):
        GateConfig(power=1.0)
    with pytest.raises(ValidationError, match="min_effect"):
        GateConfig(min_effect=0.0)


def test_gate_json_before_the_mde_still_reads():
    old = json.loads((ROOT / "gate" / "gate.json").read_text())
    # a gate file written before the gate knew its power: no outcome, no MDE, no power settings
    old.pop("outcome", None)
    for key in ("mde", "se", "tasks_needed", "power", "min_effect"):
        old["pass_hat_k"].pop(key, None)
    for key in ("power", "min_effect"):
        old["inputs"]["config"].pop(key, None)
    old["reasons"] = [r for r in old["reasons"] if not r.startswith("minimum detectable")]
    d = GateDecision.model_validate(old)
    assert d.outcome == ("promote" if old["promote"] else "block") and d.pass_hat_k.mde is None
    assert d.inputs.config.power == 0.8  # a setting it did not record takes its default
    with pytest.raises(ValidationError, match="contradicts"):
        GateDecision.model_validate({**old, "promote": True, "outcome": "inconclusive"})


def test_written_gate_json_carries_the_outcome(tmp_path):
    from pipeline.gate import write_gate

    d = read_gate(ROOT / "gate" / "gate.json")
    path = write_gate(d, tmp_path / "gate.json")
    raw = json.loads(path.read_text())
    assert raw["outcome"] == d.outcome and raw["promote"] is d.promote and "low" in raw["pass_hat_k"]
