"""The gate's decision rule on constructed outcome tables: wins, losses, noise, regressions, Holm, edge cases."""

from __future__ import annotations

import dataclasses
import random

import pytest

from pipeline.gate import GateConfig, GateInputError, TaskOutcome, evaluate, holm, sign_flip_pvalue

TEMPLATES = [f"tpl{i}" for i in range(10)]


def table(n_tasks: int, passes, modes=None, n: int = 4) -> dict[str, TaskOutcome]:
    """passes / modes: a value for every task, or a function of the task index."""
    out = {}
    for i in range(n_tasks):
        c = passes(i) if callable(passes) else passes
        m = modes(i) if callable(modes) else (modes or {})
        out[f"t{i:03d}"] = TaskOutcome(template=TEMPLATES[i % len(TEMPLATES)], n=n, passes=c, modes=m)
    return out


def noisy(n_tasks: int, seed: int, p_of=lambda i: (i % 5) / 4) -> dict[str, TaskOutcome]:
    """Trials drawn from fixed per-task success probabilities; failures split over modes by task."""
    rng = random.Random(seed)
    out = {}
    for i in range(n_tasks):
        c = sum(rng.random() < p_of(i) for _ in range(4))
        mode = ("plan_adherence", "invention", "misread")[i % 3]
        out[f"t{i:03d}"] = TaskOutcome(template=TEMPLATES[i % 10], n=4, passes=c, modes={mode: 4 - c})
    return out


def test_clear_win_promotes_and_states_the_interval():
    champion = table(60, lambda i: 4 if i % 2 else 1, lambda i: {} if i % 2 else {"invention": 3})
    candidate = table(60, 4)
    result = evaluate(candidate, champion, GateConfig())
    assert result.promote
    p = result.pass_hat_k
    assert (p.candidate, p.champion, p.diff) == (1.0, 0.5, 0.5)
    assert 0.0 < p.low <= 0.5 <= p.high
    assert "lower bound > margin" in result.reasons[0]
    assert not any(t.worse for t in result.tests)


def test_clear_loss_is_blocked_naming_pass_hat_k():
    strong = table(60, 4)
    weak = table(60, lambda i: 4 if i % 2 else 1, lambda i: {} if i % 2 else {"misread": 3})
    result = evaluate(weak, strong, GateConfig())
    assert not result.promote
    assert result.pass_hat_k.high < 0
    assert "pass^4" in result.reasons[0] and "no demonstrated pass^4 improvement" in result.reasons[0]
    worse = {t.name for t in result.tests if t.worse}
    assert worse == {"pass@1", "misread"}  # the regressions are named too


def test_identical_runs_are_blocked():
    same = noisy(80, seed=1)
    result = evaluate(same, same, GateConfig())
    assert not result.promote
    assert (result.pass_hat_k.diff, result.pass_hat_k.low, result.pass_hat_k.high) == (0.0, 0.0, 0.0)
    assert all(t.p_value == 1.0 and not t.worse for t in result.tests)


@pytest.mark.parametrize("seeds", [(1, 2), (3, 4), (5, 6), (7, 8)])
def test_same_agent_reseeded_is_blocked(seeds):
    result = evaluate(noisy(80, seeds[0]), noisy(80, seeds[1]), GateConfig())
    assert not result.promote
    assert result.pass_hat_k.low <= 0.0 <= result.pass_hat_k.high


def test_failure_mode_regression_blocks_even_when_pass_hat_k_improves():
    # odd tasks: 2/4 -> 4/4 (plan-adherence failures fixed); even tasks: still 1/4, but the failures are now
    # inventions. pass^k clearly improves, the invention rate clearly got worse.
    champion = table(80, lambda i: 2 if i % 2 else 1, lambda i: {"plan_adherence": 2 if i % 2 else 3})
    candidate = table(80, lambda i: 4 if i % 2 else 1, lambda i: {} if i % 2 else {"invention": 3})
    result = evaluate(candidate, champion, GateConfig())
    assert result.pass_hat_k.low > 0.0  # pass^k alone would promote
    assert not result.promote
    tests = {t.name: t for t in result.tests}
    assert tests["invention"].worse and tests["invention"].p_value <= tests["invention"].holm_threshold
    assert not tests["plan_adherence"].worse and not tests["pass@1"].worse
    assert any(r.startswith("invention rate got significantly worse: 0.000 → 0.375") for r in result.reasons)


def test_pass_at_1_regression_blocks_a_more_consistent_but_worse_agent():
    champion = table(60, 3, {"misread": 1})  # passes 3 of 4 everywhere: pass^4 = 0, pass@1 = 0.75
    candidate = table(60, lambda i: 4 if i % 2 else 0, lambda i: {} if i % 2 else {"misread": 4})
    result = evaluate(candidate, champion, GateConfig())
    assert result.pass_hat_k.low > 0.1
    assert not result.promote
    assert [t.name for t in result.tests if t.worse] == ["pass@1", "misread"]


def test_holm_corrects_across_metrics():
    # invention rises on exactly 5 tasks: exact sign-flip p = 1/32 = 0.031, significant alone, not among four.
    champion = table(40, 4)
    candidate = table(40, lambda i: 3 if i < 5 else 4, lambda i: {"invention": 1} if i < 5 else {})
    alone = evaluate(candidate, champion, GateConfig(tracked=["invention"], margin=-1.0))
    four = evaluate(candidate, champion, GateConfig(margin=-1.0))
    assert alone.tests[0].p_value == pytest.approx(1 / 32)
    assert alone.tests[0].worse and not alone.promote
    inv = next(t for t in four.tests if t.name == "invention")
    assert inv.p_value == pytest.approx(1 / 32) and inv.holm_threshold == pytest.approx(0.05 / 4)
    assert not inv.worse and four.promote


def test_margin_is_respected():
    champion = table(60, lambda i: 4 if i % 2 else 0, lambda i: {} if i % 2 else {"invention": 4})
    candidate = table(60, lambda i: 4 if i % 4 else 0, lambda i: {} if i % 4 else {"invention": 4})
    assert evaluate(candidate, champion, GateConfig()).promote
    blocked = evaluate(candidate, champion, GateConfig(margin=0.24))
    assert not blocked.promote and "≤ margin +0.240" in blocked.reasons[0]


def test_decision_is_deterministic():
    a, b = noisy(50, 1), noisy(50, 2)
    assert evaluate(a, b, GateConfig(seed=3)) == evaluate(a, b, GateConfig(seed=3))


def test_first_iteration_rule_without_champion():
    good = table(40, lambda i: 4 if i % 4 else 0)
    result = evaluate(good, None, GateConfig())
    assert result.promote and result.tests == [] and result.pass_hat_k.champion is None
    assert "no champion" in result.reasons[0]
    assert not evaluate(good, None, GateConfig(margin=0.9)).promote
    assert not evaluate(table(40, 0), None, GateConfig()).promote


def test_mismatched_tasks_and_short_tasks_are_errors():
    with pytest.raises(GateInputError, match=r"different tasks: 1 only in candidate \['t010'\], 0 only in champion"):
        evaluate(table(11, 4), table(10, 4), GateConfig())
    short = table(10, 4) | {"t_short": TaskOutcome(template=None, n=3, passes=3)}
    with pytest.raises(
        GateInputError, match=r"candidate: 1 task\(s\) have fewer than k=4 valid trials: t_short \(n=3\)"
    ):
        evaluate(short, short, GateConfig())
    with pytest.raises(GateInputError, match="passes=5 must be within 0..n=4"):
        TaskOutcome(template=None, n=4, passes=5)
    with pytest.raises(GateInputError, match="mode counts"):
        TaskOutcome(template=None, n=4, passes=3, modes={"invention": 2})


def test_holm_step_down_stops_at_the_first_acceptance():
    verdicts = holm({"a": 0.001, "b": 0.02, "c": 0.011, "d": 0.5}, 0.05)
    assert verdicts == {"a": (0.0125, True), "c": (0.05 / 3, True), "b": (0.025, True), "d": (0.05, False)}
    assert holm({"a": 0.02, "b": 0.001}, 0.05)["a"] == (0.05, True)
    assert holm({"a": 0.03, "b": 0.03}, 0.05) == {"a": (0.025, False), "b": (0.05, False)}


def test_sign_flip_is_exact_for_few_tasks_and_seeded_otherwise():
    assert sign_flip_pvalue({"a": 0.5, "b": 0.25, "c": -0.25}, 2000, 0) == pytest.approx(3 / 8)
    many = {f"t{i}": (0.25 if i % 3 else -0.25) for i in range(60)}
    p = sign_flip_pvalue(many, 2000, 0)
    assert p == sign_flip_pvalue(many, 2000, 0)
    assert 0.0 < p < 0.05  # 40 worse vs 20 better: z ≈ 2.6
    assert sign_flip_pvalue({k: -v for k, v in many.items()}, 2000, 0) > 0.95


def test_config_rejects_unknown_keys_and_metrics():
    with pytest.raises(ValueError, match="Extra inputs"):
        GateConfig(k=4, margn=0.1)
    with pytest.raises(ValueError, match="unknown tracked metric"):
        GateConfig(tracked=["pass@1", "rudeness"])


def _mixed(n_tasks: int, template_of) -> tuple[dict[str, TaskOutcome], dict[str, TaskOutcome]]:
    """Candidate and champion whose per-task outcomes differ: the candidate gains on two tasks of three."""
    cand, champ = {}, {}
    for i in range(n_tasks):
        tid, tpl = f"t{i:03d}", template_of(i)
        cand[tid] = TaskOutcome(template=tpl, n=2, passes=2 if i % 3 else 0, modes={} if i % 3 else {"misread": 2})
        champ[tid] = TaskOutcome(template=tpl, n=2, passes=0, modes={"invention": 2})
    return cand, champ


def test_many_template_clusters_are_resampled_as_clusters():
    from pipeline.gate.stats import per_task
    from pipeline.metrics.intervals import paired_bootstrap_draws, percentile_interval

    cand, champ = _mixed(24, lambda i: TEMPLATES[i % 6])  # 6 clusters: at least MIN_CLUSTERS
    config = GateConfig(k=2)
    result = evaluate(cand, champ, config)
    p = result.pass_hat_k
    assert p.resampled is None and p.clusters is None
    assert "resampled" not in p.model_dump() and "clusters" not in p.model_dump()  # gate.json as before
    assert not any("resampled the" in r for r in result.reasons)
    templates = {t: o.template for t, o in cand.items()}
    point, draws = paired_bootstrap_draws(
        per_task(cand, "pass^k", 2), per_task(champ, "pass^k", 2), clusters=templates, resamples=2000, seed=0
    )
    iv = percentile_interval(point, draws, 0.95)
    assert (p.low, p.high) == (round(iv.low, 6), round(iv.high, 6))  # the clustered draws, unchanged


def test_one_template_cluster_falls_back_to_resampling_tasks():
    cand, champ = _mixed(12, lambda i: "cancel")  # one cluster: a cluster bootstrap has no spread
    result = evaluate(cand, champ, GateConfig(k=2))
    p = result.pass_hat_k
    assert (p.resampled, p.clusters) == ("tasks", 1)
    assert p.model_dump()["resampled"] == "tasks"
    assert p.low < p.diff < p.high and p.se > 0  # outcomes differ by task, so the interval has spread
    assert p.mde is not None
    reason = next(r for r in result.reasons if "resampled the" in r)
    assert "12 tasks, not template clusters" in reason and "1 template (fewer than 5)" in reason
    assert result.outcome == "promote"  # +0.667 on 12 tasks, 8 of them gained, none lost


def test_one_template_cluster_without_a_champion_also_resamples_tasks():
    cand, _ = _mixed(12, lambda i: "cancel")
    p = evaluate(cand, None, GateConfig(k=2)).pass_hat_k
    assert p.resampled == "tasks" and p.low < p.diff < p.high


def test_untemplated_tasks_are_their_own_clusters_and_need_no_fallback():
    cand, champ = _mixed(4, lambda i: None)  # 4 singleton clusters: resampling them is resampling tasks
    assert evaluate(cand, champ, GateConfig(k=2)).pass_hat_k.resampled is None


def test_committed_gate_json_reads_back_to_the_same_bytes(tmp_path):
    from pathlib import Path

    from pipeline.gate.decision import read_gate, write_gate

    committed = Path(__file__).resolve().parents[2] / "gate" / "gate.json"
    decision = read_gate(committed)
    assert decision.pass_hat_k.resampled is None  # a many-template run: clusters resampled
    assert write_gate(decision, tmp_path / "gate.json").read_bytes() == committed.read_bytes()


def _saw(table: dict[str, TaskOutcome], saw) -> dict[str, TaskOutcome]:
    return {t: dataclasses.replace(o, saw_tools=saw(o)) for t, o in table.items()}


def test_a_mode_the_champion_had_no_chance_to_show_is_not_tested():
    # The champion never called a tool (no tool output in any trial): it passes only the half of the tasks a
    # refusal passes. The candidate acts, passes more, and misreads on some of what it now reads.
    champion = _saw(table(80, lambda i: 4 if i % 2 else 0, lambda i: {} if i % 2 else {"invention": 1}), lambda o: 0)
    candidate = _saw(
        table(80, lambda i: 3 if i % 4 == 2 else 4, lambda i: {"misread": 1} if i % 4 == 2 else {}),
        lambda o: o.n,
    )
    result = evaluate(candidate, champion, GateConfig())
    assert result.promote, result.reasons
    assert "misread" not in {t.name for t in result.tests}
    assert {"plan_adherence", "invention", "pass@1"} <= {t.name for t in result.tests}
    assert any(r.startswith("misread not tested: the champion saw no tool output in any trial") for r in result.reasons)


def test_a_champion_that_saw_tool_output_keeps_the_mode_tested():
    # the same, but the champion read tool output in one trial: its misread rate of 0 is a rate, and the
    # candidate's misreads are a regression
    champion = _saw(table(80, lambda i: 4 if i % 2 else 0), lambda o: 0)
    champion["t000"] = dataclasses.replace(champion["t000"], saw_tools=1)
    candidate = _saw(
        table(80, lambda i: 3 if i % 4 == 2 else 4, lambda i: {"misread": 1} if i % 4 == 2 else {}),
        lambda o: o.n,
    )
    result = evaluate(candidate, champion, GateConfig())
    assert not result.promote
    assert {t.name: t for t in result.tests}["misread"].worse
    unknown = {t: dataclasses.replace(o, saw_tools=None) for t, o in champion.items()}  # not known: tested
    assert not evaluate(candidate, unknown, GateConfig()).promote


def test_saw_tools_is_checked_against_the_trials():
    with pytest.raises(GateInputError, match="saw_tools=5 must be within 0..n=4"):
        TaskOutcome(template="a", n=4, passes=1, saw_tools=5)
