"""The gate's decision rule on outcome tables: a pure function of per-task counts, shared by `decide` and the
power simulation (bench/bench_gate_power.py), so the simulated rule is the rule that runs.

Promote only if
  1. the lower bound of the paired bootstrap interval (template clusters resampled; tasks, below MIN_CLUSTERS
     clusters) of candidate − champion mean per-task pass^k exceeds the margin, and
  2. no tracked metric (pass@1, pass^k over the 'act' tasks, failure-mode rates) got significantly worse: per
     metric a one-sided sign-flip permutation test over tasks of the per-task differences, Holm-corrected across
     metrics. A mode only a tool output can show (misread) is left untested against a champion that saw no tool
     output in any trial: an agent that never calls a tool has no rate of it to be worse than.

Beside the decision, pass^k is compared apart over the 'act' tasks (their gold changes the world) and the 'refuse'
tasks (it changes nothing; an agent that never acts passes them), each with its paired bootstrap interval
(pipeline/gate/split.py): shown, not a criterion, so that a gain made of refusals cannot pass unseen, while
'act pass^k' among the tracked metrics blocks a significant drop on the 'act' side.

The bootstrap clusters by template because the gain is a claim about tasks like these (tasks of one template
succeed and fail together). With fewer than MIN_CLUSTERS template clusters (a held-out set drawn from one
template, say) a cluster bootstrap draws the same few clusters every time and its interval has next to no
spread, which is no finding; the gate then resamples tasks instead, records `resampled: "tasks"` in the pass^k
comparison and says so among its reasons (the interval then speaks of these templates only).
The sign-flip test asks a narrower question, whether these held-out tasks show a
regression beyond trial noise; given the tasks, trials are independent, so flipping each task's labels is
exact in level under "the candidate and the champion are the same agent" (it enumerates every flip when few
tasks differ, otherwise draws `resamples` seeded flips and counts the observed labelling too).

Without a champion (the first iteration) there is nothing to get worse against: promote iff the lower bound
of the candidate's own pass^k (clustered bootstrap) exceeds the margin.

Not promoting is "block" or "inconclusive": the spread of the same bootstrap draws gives the minimum
detectable effect (pipeline/gate/power.py), and an interval that straddles the margin is inconclusive when
the gate could not have seen a gain of min_effect beyond it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, model_serializer

from pipeline.dataset import Expected
from pipeline.gate.config import ACT_PASS_HAT_K, HIGHER_IS_BETTER, GateConfig
from pipeline.gate.errors import GateInputError
from pipeline.gate.power import Outcome, mde, outcome, sign_decisive, standard_error, tasks_needed
from pipeline.gate.split import SplitComparison, compare_by_expected, split_reasons
from pipeline.gate.table import MIN_CLUSTERS, PASS_HAT_K, Table, per_task, resampling_unit
from pipeline.grading import BY_NAME
from pipeline.metrics import bootstrap_draws, paired_bootstrap_draws, percentile_interval
from pipeline.strict import Strict

DIGITS = 6
_MAX_NAMED = 5


class PassHatK(Strict):
    """The pass^k comparison the promotion rests on."""

    k: int
    candidate: float = Field(description="Candidate mean per-task pass^k.")
    champion: float | None = Field(description="Champion mean per-task pass^k; None without a champion.")
    diff: float = Field(description="candidate − champion (the candidate's own pass^k without a champion).")
    low: float = Field(description="Lower bound of the bootstrap interval of diff.")
    high: float = Field(description="Upper bound of the bootstrap interval of diff.")
    confidence: float
    margin: float
    # What the gate could have seen (pipeline/gate/power.py); None in a gate.json written before they existed.
    se: float | None = Field(default=None, description="Standard error of diff: spread of the bootstrap draws.")
    power: float | None = Field(default=None, description="Power the MDE is stated at.")
    mde: float | None = Field(
        default=None,
        description="Minimum detectable effect: the true gain promoted with probability `power` (None when se is"
        " 0: no spread to estimate it from).",
    )
    min_effect: float | None = Field(default=None, description="Gain beyond the margin the gate should see.")
    tasks_needed: int | None = Field(
        default=None,
        description="Held-out tasks at which the MDE falls to margin + min_effect (None when se is 0).",
    )
    # Left out of gate.json when None, so a clustered gate writes the bytes it wrote before the fallback existed.
    resampled: Literal["tasks"] | None = Field(
        default=None,
        description="'tasks' when the bootstrap resampled tasks because the held-out tasks form fewer than"
        f" {MIN_CLUSTERS} template clusters; None (absent): template clusters were resampled.",
    )
    clusters: int | None = Field(
        default=None, description="Template clusters the held-out tasks form, given when tasks were resampled."
    )

    @model_serializer(mode="wrap")
    def _omit_clustered(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        for key in ("resampled", "clusters"):
            if data.get(key) is None:
                data.pop(key, None)
        return data


class MetricTest(Strict):
    """One 'did it get worse' test."""

    name: str
    better: Literal["higher", "lower"] = Field(description="Which direction is an improvement.")
    candidate: float = Field(description="Candidate mean over tasks of the per-task value.")
    champion: float
    diff: float = Field(description="candidate − champion.")
    p_value: float = Field(description="One-sided sign-flip permutation p-value for 'the candidate is worse'.")
    holm_threshold: float = Field(description="alpha / (m − rank + 1) for this p-value's rank.")
    worse: bool = Field(description="Rejected by Holm's step-down procedure: significantly worse.")


class Evaluation(Strict):
    promote: bool
    outcome: Outcome
    reasons: list[str]
    pass_hat_k: PassHatK
    tests: list[MetricTest]
    by_expected: dict[Expected, SplitComparison] = Field(default_factory=dict)


def _r(x: float) -> float:
    return round(float(x), DIGITS)


def check_tables(candidate: Table, champion: Table | None, k: int) -> None:
    """Same tasks in both runs and at least k valid trials per task, else an error naming the tasks."""
    if not candidate:
        raise GateInputError("the candidate run has no tasks")
    if champion is not None:
        only_cand = sorted(set(candidate) - set(champion))
        only_champ = sorted(set(champion) - set(candidate))
        if only_cand or only_champ:
            raise GateInputError(
                "candidate and champion were measured on different tasks: "
                f"{len(only_cand)} only in candidate {only_cand[:_MAX_NAMED]}, "
                f"{len(only_champ)} only in champion {only_champ[:_MAX_NAMED]}"
            )
    for name, table in (("candidate", candidate), ("champion", champion or {})):
        short = sorted(t for t, o in table.items() if o.n < k)
        if short:
            detail = ", ".join(f"{t} (n={table[t].n})" for t in short[:_MAX_NAMED])
            raise GateInputError(
                f"{name}: {len(short)} task(s) have fewer than k={k} valid trials: {detail}"
                + (f" and {len(short) - _MAX_NAMED} more" if len(short) > _MAX_NAMED else "")
                + " (infrastructure-error trials do not count)"
            )


def _subset_sums(values: list[float]) -> list[list[float]]:
    """Per chunk of 8 values, the sum of every subset (indexed by an 8-bit mask): one lookup per 8 signs."""
    tables = []
    for start in range(0, len(values), 8):
        chunk = values[start : start + 8]
        table = [0.0] * (1 << len(chunk))
        for mask in range(1, len(table)):
            low = mask & -mask
            table[mask] = table[mask ^ low] + chunk[low.bit_length() - 1]
        tables.append(table)
    return tables


def sign_flip_pvalue(worse: Mapping[str, float], resamples: int, seed: int | str) -> float:
    """One-sided p-value that the mean of ``worse`` (per-task differences, positive = worse) is above zero.

    Flipping a task's sign swaps which agent is called the candidate on it; under "the two agents are the same
    on every task" each flip is as likely as the observed labelling. Tasks with no difference are left out
    (their flips change nothing); up to log2(resamples) remaining tasks are enumerated exactly.

    >>> sign_flip_pvalue({"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.0}, 2000, 0)  # exact: 1 of 8 flips as extreme
    0.125
    >>> sign_flip_pvalue({"a": 0.0, "b": 0.0}, 2000, 0)
    1.0
    """
    values = [worse[t] for t in sorted(worse) if worse[t] != 0.0]
    if not values:
        return 1.0
    m, total = len(values), math.fsum(values)
    tables = _subset_sums(values)
    eps = 1e-9 * max(1.0, math.fsum(abs(v) for v in values))

    def as_extreme(bits: int) -> bool:  # the bits mark tasks keeping their sign: statistic = 2 * kept − total
        kept = sum(table[bits >> (8 * c) & 0xFF] for c, table in enumerate(tables))
        return 2.0 * kept - total >= total - eps

    if 2**m <= resamples:
        return sum(as_extreme(bits) for bits in range(2**m)) / 2**m
    rng = random.Random(f"gate-sign-flip:{seed}")
    hits = sum(as_extreme(rng.getrandbits(m)) for _ in range(resamples))
    return (1 + hits) / (1 + resamples)


def holm(pvalues: Mapping[str, float], alpha: float) -> dict[str, tuple[float, bool]]:
    """name -> (threshold, rejected) by Holm's step-down procedure (family-wise error <= alpha).

    >>> holm({"a": 0.01, "b": 0.04, "c": 0.03}, 0.05)
    {'a': (0.016666666666666666, True), 'c': (0.025, False), 'b': (0.05, False)}
    """
    m = len(pvalues)
    out: dict[str, tuple[float, bool]] = {}
    still = True
    for rank, name in enumerate(sorted(pvalues, key=lambda n: (pvalues[n], n))):
        threshold = alpha / (m - rank)
        still = still and pvalues[name] <= threshold
        out[name] = (threshold, still)
    return out


def _pass_hat_k(candidate: Table, champion: Table | None, config: GateConfig) -> PassHatK:
    cand = per_task(candidate, PASS_HAT_K, config.k)
    clusters, n_clusters = resampling_unit(candidate)
    opts: dict[str, Any] = dict(clusters=clusters, resamples=config.resamples, seed=config.seed)
    if champion is None:
        point, draws = bootstrap_draws(cand, **opts)
        champ_mean = None
    else:
        champ = per_task(champion, PASS_HAT_K, config.k)
        point, draws = paired_bootstrap_draws(cand, champ, **opts)
        champ_mean = _r(sum(champ.values()) / len(champ))
    iv = percentile_interval(point, draws, config.confidence)
    se = standard_error(draws)
    return PassHatK(
        k=config.k,
        candidate=_r(sum(cand.values()) / len(cand)),
        champion=champ_mean,
        diff=_r(iv.point),
        low=_r(iv.low),
        high=_r(iv.high),
        confidence=config.confidence,
        margin=config.margin,
        se=_r(se),
        power=config.power,
        mde=None if (m := mde(se, config.margin, config.confidence, config.power)) is None else _r(m),
        min_effect=config.min_effect,
        tasks_needed=tasks_needed(len(cand), se, config.min_effect, config.confidence, config.power),
        resampled=None if clusters is not None else "tasks",
        clusters=None if clusters is not None else n_clusters,
    )


def _tests(candidate: Table, champion: Table, config: GateConfig) -> tuple[list[MetricTest], list[str]]:
    """The 'got worse' tests, Holm-corrected across them, and the tracked metrics left untested (no task has a
    value: 'act pass^k' on held-out tasks none of whose gold changes the world; a mode the champion had no chance
    to show)."""
    raw, untested = [], []
    for name in config.tracked:
        if _no_chance(name, champion):
            untested.append(name)
            continue
        cand = per_task(candidate, name, config.k)
        # over the candidate's tasks: 'act pass^k' reads the champion on the same tasks, whatever its table says
        champ = per_task({t: champion[t] for t in cand}, PASS_HAT_K if name == ACT_PASS_HAT_K else name, config.k)
        if not cand:
            untested.append(name)
            continue
        sign = -1.0 if name in HIGHER_IS_BETTER else 1.0  # orient so that positive = worse
        worse = {t: sign * (cand[t] - champ[t]) for t in cand}
        p = sign_flip_pvalue(worse, config.resamples, f"{config.seed}:{name}")
        raw.append((name, sum(cand.values()) / len(cand), sum(champ.values()) / len(champ), p))
    verdicts = holm({name: p for name, _, _, p in raw}, config.alpha)
    tests = [
        MetricTest(
            name=name,
            better="higher" if name in HIGHER_IS_BETTER else "lower",
            candidate=_r(c),
            champion=_r(h),
            diff=_r(c - h),
            p_value=_r(p),
            holm_threshold=_r(verdicts[name][0]),
            worse=verdicts[name][1],
        )
        for name, c, h, p in raw
    ]
    return tests, untested


def _no_chance(name: str, champion: Table) -> bool:
    """A mode only a tool output can show, and a champion that saw none in any trial: its rate of 0 is no rate
    (an agent that never calls a tool cannot misread one), so a candidate that now acts is not 'worse' at it."""
    spec = BY_NAME.get(name)
    return (
        spec is not None
        and spec.needs_tool_output
        and all(o.saw_tools is not None for o in champion.values())
        and not any(o.saw_tools for o in champion.values())
    )


def _untested_reason(name: str, candidate: Table, champion: Table | None = None) -> str:
    if champion is not None and _no_chance(name, champion):
        return (
            f"{name} not tested: the champion saw no tool output in any trial, so it had no chance to show it"
            " (its rate of 0 is no baseline to be worse than)"
        )
    if name == ACT_PASS_HAT_K:
        why = (
            "no held-out task's gold changes the world (no act tasks)"
            if any(o.expected for o in candidate.values())
            else "the held-out tasks' expected outcomes (act / refuse) are not known"
        )
    else:
        why = "no task has a value"
    return f"{name} not tested: {why}"


def evaluate(candidate: Table, champion: Table | None, config: GateConfig) -> Evaluation:
    """The gate's decision on outcome tables (task id -> TaskOutcome); champion None = first iteration."""
    check_tables(candidate, champion, config.k)
    phk = _pass_hat_k(candidate, champion, config)
    level = f"{config.confidence:.0%}"
    what = f"pass^{config.k} gain" if champion is not None else f"pass^{config.k} (no champion: first iteration)"
    span = f"{phk.diff:+.3f} ({level} interval {phk.low:+.3f} … {phk.high:+.3f})"
    gain_ok = phk.low > config.margin
    reasons = [
        f"{what} {span}: lower bound {'>' if gain_ok else '≤'} margin {config.margin:+.3f}"
        + ("" if gain_ok else f" — no demonstrated pass^{config.k} improvement")
    ]
    if phk.resampled == "tasks":
        reasons.append(_resampling_reason(phk, len(candidate)))
    split = compare_by_expected(candidate, champion, config)
    reasons += split_reasons(split, config)
    tests, untested = _tests(candidate, champion, config) if champion is not None else ([], [])
    reasons += [_untested_reason(name, candidate, champion) for name in untested]
    for t in tests:
        if t.worse:
            label = t.name if t.name in HIGHER_IS_BETTER else f"{t.name} rate"
            reasons.append(
                f"{label} got significantly worse: {t.champion:.3f} → {t.candidate:.3f} "
                f"(p={t.p_value:.4f} ≤ Holm threshold {t.holm_threshold:.4f})"
            )
    if tests and not any(t.worse for t in tests):
        reasons.append(
            f"no tracked metric got significantly worse ({', '.join(t.name for t in tests)}; "
            f"Holm, alpha={config.alpha})"
        )
    regressed = any(t.worse for t in tests)
    decisive = sign_decisive(len(candidate), config.confidence)
    result = outcome(phk.low, phk.high, config.margin, phk.mde, config.min_effect, regressed, decisive)
    reasons.append(_sensitivity_reason(phk, result, config, len(candidate)))
    return Evaluation(
        promote=result == "promote", outcome=result, reasons=reasons, pass_hat_k=phk, tests=tests, by_expected=split
    )


def _resampling_reason(phk: PassHatK, n_tasks: int) -> str:
    plural = "s" if phk.clusters != 1 else ""
    return (
        f"the bootstrap resampled the {n_tasks} tasks, not template clusters: they come from {phk.clusters}"
        f" template{plural} (fewer than {MIN_CLUSTERS}), too few clusters for an interval with any spread; tasks"
        " of one template are treated as independent, so the interval speaks of these templates only"
    )


def _sign_tasks(confidence: float) -> int:
    return next(n for n in range(1, 64) if sign_decisive(n, confidence))


def _sensitivity_reason(phk: PassHatK, result: Outcome, config: GateConfig, n_tasks: int) -> str:
    """One line on what the gate could have seen, and for an inconclusive outcome what would resolve it."""
    if phk.mde is None:
        statistic = f"pass^{config.k} {'gain' if phk.champion is not None else 'value'}"
        plural = "s" if n_tasks != 1 else ""
        why = (
            f"the standard error is 0: every bootstrap resample of the {n_tasks} task{plural} gave"
            f" the same {statistic} {phk.diff:+.3f}, so there is no spread to estimate the minimum detectable"
            " effect from"
        )
        if result == "inconclusive":
            return (
                f"inconclusive: {why}; that is no finding (with no spread a gain counts only when at least"
                f" {_sign_tasks(config.confidence)} tasks all gained) — measure more held-out tasks or more trials"
            )
        return why
    seen = (
        f"minimum detectable pass^{config.k} effect {phk.mde:+.3f} at {config.power:.0%} power "
        f"(se {phk.se:.3f}; the gate should see margin + {config.min_effect:.3f} = "
        f"{config.margin + config.min_effect:+.3f})"
    )
    if result == "inconclusive":
        return (
            f"inconclusive: the interval straddles the margin and a gain of {config.min_effect:.3f} beyond it "
            f"could have gone unseen; {seen}; about {phk.tasks_needed} held-out tasks would resolve it"
        )
    return seen
