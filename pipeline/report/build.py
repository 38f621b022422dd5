"""`build_report`: baseline and candidate measure runs (plus the gate's decision) → one self-contained HTML file.

The page embeds its CSS and its plots (base64 PNG) and references nothing outside itself, so it can be
attached to an MLflow run, mailed, or opened offline. The same plots are written as PNG files to plots/ next
to the HTML for DVC plots and MLflow artifacts. Sections with no data say so instead of disappearing.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.dataset import ProvenanceError, check_provenance, read_tasks
from pipeline.grading import SIGNATURES
from pipeline.grading.failure_modes import FAILURE_MODES
from pipeline.metrics import BUCKETS, DIFF_KINDS, IterationHeadline, MeasureSummary, bucket_of, pp
from pipeline.outputs import atomic_write
from pipeline.report import plots
from pipeline.report.conversation import render_flip
from pipeline.report.cost_view import cost_section
from pipeline.report.flips import Flip, find_flips
from pipeline.report.gate_view import GateView, check_gate_matches, read_gate
from pipeline.report.history import history_section
from pipeline.report.html import Safe, cell, esc, img, join, note, num, page, pct, section, table, tag
from pipeline.report.inputs import ReportInputError, RunData, load_run, load_summary
from pipeline.report.split_view import gate_table, overview_rows, pass_table
from pipeline.report.template_view import template_section
from pipeline.report.verdicts import verdict_section

log = logging.getLogger(__name__)

ExtraAgents = Mapping[str, Path] | Sequence[Path]


def _extras(extra_agents: ExtraAgents | None) -> dict[str, MeasureSummary]:
    if not extra_agents:
        return {}
    if isinstance(extra_agents, Mapping):
        return {str(k): load_summary(Path(v)) for k, v in extra_agents.items()}
    out: dict[str, MeasureSummary] = {}
    for p in extra_agents:
        s = load_summary(Path(p))
        out[s.agent if s.agent not in out else f"{s.agent} ({p})"] = s
    return out


class _Plots:
    """Collects the PNGs: embedded in the page and written to plots/<name>.png."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.written: list[Path] = []

    def add(self, name: str, fig, alt: str) -> Safe:
        png = plots.to_png(fig)
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{name}.png"
        atomic_write(path, png)
        self.written.append(path)
        return img(png, alt, name)


def _spend_row(b: MeasureSummary, c: MeasureSummary) -> list[object]:
    """Cost per success where both runs are priced; the agent's tokens per success where not (a price of 0 for an
    unpriced model says nothing)."""
    if b.cost.priced and c.cost.priced:
        return [f"cost per success ({c.cost.currency})", num(b.cost.cost_per_success), num(c.cost.cost_per_success), ""]
    tokens = [f"{s.cost.tokens_per_success:,.0f}" if s.cost.tokens_per_success is not None else "—" for s in (b, c)]
    return ["agent tokens per success (not priced)", *tokens, ""]


def _overview(runs: dict[str, MeasureSummary], k: int) -> Safe:
    b, c = runs["baseline"], runs["candidate"]

    def row(label: str, get, fmt=pct, delta: bool = True) -> list[object]:
        vb, vc = get(b), get(c)
        d = pp(vc - vb) if delta and vb is not None and vc is not None else ""
        return [label, fmt(vb), fmt(vc), d]

    rows: list[list[object]] = [
        ["agent", b.agent, c.agent, ""],
        ["tasks × trials", f"{b.tasks} × {b.trials_per_task}", f"{c.tasks} × {c.trials_per_task}", ""],
        row("pass@1", lambda s: s.pass_at_1),
        row(f"pass^{k}", lambda s: s.pass_hat_k.get(str(k))),
        *overview_rows(b, c, k),
        row(f"pass@{k}", lambda s: s.pass_at_k.get(str(k))),
        *[row(f"tasks {bk}", lambda s, bk=bk: s.buckets.get(bk)) for bk in BUCKETS],
        row("infrastructure errors (excluded)", lambda s: s.infra_errors, str, False),
        _spend_row(b, c),
    ]
    return table(["", "baseline", "candidate", "change"], rows)


def _pass_section(runs: dict[str, MeasureSummary], pl: _Plots) -> Safe:
    b, c = runs["baseline"], runs["candidate"]
    ks = sorted({int(k) for s in (b, c) for k in s.pass_hat_k})

    def hat(s: MeasureSummary, k: int) -> str:
        if str(k) not in s.pass_hat_k:
            return "—"
        lo, hi = s.intervals.get(f"pass_hat_{k}", [None, None])
        return f"{s.pass_hat_k[str(k)]:.1%}" + (f" [{lo:.1%}, {hi:.1%}]" if lo is not None else "")

    rows = [[k, hat(b, k), hat(c, k), pct(b.pass_at_k.get(str(k))), pct(c.pass_at_k.get(str(k)))] for k in ks]
    return section(
        "pass-k",
        "Reliability: pass^k and pass@k",
        pl.add("pass_hat_k", plots.pass_curves(runs), "pass^k and pass@k for k = 1..K"),
        table(["k", "baseline pass^k [95%]", "candidate pass^k [95%]", "baseline pass@k", "candidate pass@k"], rows),
        pass_table(b, c),
    )


def _rates_table(runs: dict[str, MeasureSummary], which: str, cats: tuple[str, ...]) -> Safe:
    rows = []
    for cat in cats:
        cells: list[object] = [cat.replace("_", " ")]
        for s in (runs["baseline"], runs["candidate"]):
            r = getattr(s, which).get(cat)
            cells.append(f"{pct(r.trials)} / {pct(r.tasks)}" if r else "—")
        rows.append(cells)
    return table(["", "baseline (trials / tasks)", "candidate (trials / tasks)"], rows)


def _failure_section(runs: dict[str, MeasureSummary], pl: _Plots) -> Safe:
    b, c = runs["baseline"], runs["candidate"]
    sig_rows = [[s.replace("_", " "), pct(b.signatures.get(s)), pct(c.signatures.get(s))] for s in SIGNATURES]
    sig_rows.append(["looked complete", pct(b.looked_complete_share), pct(c.looked_complete_share)])
    return section(
        "failure-modes",
        "Failure modes and state diffs, before and after",
        pl.add("failure_modes", plots.rate_bars(runs, "failure_modes"), "failure-mode rates (trial and task share)"),
        _rates_table(runs, "failure_modes", FAILURE_MODES),
        pl.add("diff_categories", plots.rate_bars(runs, "diff_categories"), "state-diff categories"),
        _rates_table(runs, "diff_categories", DIFF_KINDS),
        tag("h3", "Failure signatures (share of failed trials)"),
        table(["", "baseline", "candidate"], sig_rows),
    )


def _bucket_section(runs: dict[str, MeasureSummary], base: RunData, cand: RunData, pl: _Plots) -> Safe:
    bc, cc = base.counts(), cand.counts()
    moves = Counter((bucket_of(*bc[t]), bucket_of(*cc[t])) for t in sorted(set(bc) & set(cc)) if bc[t][1] and cc[t][1])
    rows = [[f"baseline {b}", *[moves.get((b, a), 0) for a in BUCKETS]] for b in BUCKETS]
    two = {k: runs[k] for k in ("baseline", "candidate")}
    return section(
        "buckets",
        "Consistency buckets",
        pl.add("buckets", plots.bucket_bars(two), "always / flipping / never, share of tasks"),
        tag("h3", "Where each task went (task counts)"),
        table(["", *[f"candidate {a}" for a in BUCKETS]], rows),
    )


def _gate_section(gate: GateView | None, pl: _Plots) -> Safe:
    if gate is None:
        return section("gate", "Gate decision", note("No gate.json was given: no promotion decision to show."))
    cls = "promote" if gate.promote else "block" if gate.promote is False else "unknown"
    word = "PROMOTE" if gate.promote else "BLOCKED" if gate.promote is False else gate.decision.upper()
    if gate.outcome == "inconclusive":
        cls, word = "inconclusive", "INCONCLUSIVE"
    body: list[object] = [tag("p", join([tag("span", word, cls=f"badge {cls}"), f"  decision: {gate.decision}"]))]
    if gate.sensitivity:
        body.append(tag("p", gate.sensitivity, cls="gate-sensitivity"))
    p = gate.primary
    if p is not None:
        est = f"{p.estimate:+.3f} " if p.estimate is not None else ""
        margin = f", margin {gate.margin:+.3f}" if gate.margin is not None else ""
        text = gate.headline or f"{p.name}: {est}[{p.low:+.3f}, {p.high:+.3f}]{margin}"
        body.append(tag("p", tag("strong", text), cls="gate-headline"))
        body.append(
            pl.add(
                "gate_interval",
                plots.gate_interval(
                    p, gate.margin, None if gate.outcome == "inconclusive" else gate.promote, mde=gate.mde
                ),
                "the gate's interval against zero and the margin",
            )
        )
    else:
        body.append(note("gate.json holds no interval."))
    if gate.by_expected:
        body.append(gate_table(gate.by_expected))
    body.append(tag("h3", "Reasons"))
    body.append(tag("ul", join(tag("li", r) for r in gate.reasons)) if gate.reasons else note("No reasons given."))
    if gate.tests:
        body.append(tag("h3", "Did anything get significantly worse? (Holm-corrected)"))
        cols = ["name", "better", "candidate", "champion", "diff", "p_value", "holm_threshold", "worse"]
        body.append(
            table(
                [c.replace("_", " ") for c in cols],
                [[cell(t.get(c)) for c in cols] for t in gate.tests],
            )
        )
    if gate.intervals and not gate.headline:
        body.append(tag("h3", "All intervals"))
        body.append(
            table(
                ["statistic", "estimate", "low", "high"],
                [[iv.name, num(iv.estimate), num(iv.low), num(iv.high)] for iv in gate.intervals],
            )
        )
    raw = json.dumps(gate.raw, indent=2, sort_keys=True, ensure_ascii=False)
    body.append(Safe(f'<details><summary>gate.json</summary><pre class="raw">{esc(raw)}</pre></details>'))
    return section("gate", "Gate decision", *body)


def _flip_section(flips: list[Flip], base: RunData, cand: RunData, tasks: dict, max_flips: int) -> Safe:
    bc, cc = base.counts(), cand.counts()
    changed = [
        [t, f"{bc[t][0]}/{bc[t][1]}", f"{cc[t][0]}/{cc[t][1]}"] for t in sorted(set(bc) & set(cc)) if bc[t] != cc[t]
    ]
    n_fixed = sum(f.direction == "fixed" for f in flips)
    body: list[object] = [
        tag(
            "p",
            f"{n_fixed} task(s) fixed (baseline failed every trial, candidate passed at "
            f"least one), {len(flips) - n_fixed} regressed (the reverse).",
        )
    ]
    if not flips:
        body.append(note("No task flipped between baseline and candidate: no trajectory diffs to show."))
    shown = [f for d in ("fixed", "regressed") for f in [x for x in flips if x.direction == d][:max_flips]]
    if len(shown) < len(flips):
        body.append(note(f"Showing {len(shown)} of {len(flips)} flips ({max_flips} per direction)."))
    body += [render_flip(f, tasks.get(f.task_id)) for f in shown]
    if changed:
        body.append(
            Safe(
                "<details><summary>Every task whose passing-trial count changed "
                f"({len(changed)})</summary>{table(['task', 'baseline', 'candidate'], changed)}</details>"
            )
        )
    return section("flips", "Tasks that flipped: before / after trajectories", *body)


def _check_same_tasks(base: RunData, cand: RunData, tasks: dict, tasks_path: Path) -> None:
    """Both runs measured on the same tasks, all in the task file: a comparison over different task sets would
    show a difference that is not the agents'."""
    base_ids, cand_ids = {k[0] for k in base.trajectories}, {k[0] for k in cand.trajectories}
    if base_ids != cand_ids:
        only_base, only_cand = sorted(base_ids - cand_ids), sorted(cand_ids - base_ids)
        example = (only_base or only_cand)[0]
        raise ReportInputError(
            f"{base.path} and {cand.path} were measured on different task sets ({len(only_base)} task(s) only in the"
            f" baseline, {len(only_cand)} only in the candidate, e.g. {example!r}); measure both on the same tasks"
        )
    missing = sorted(base_ids - set(tasks))
    if missing:
        raise ReportInputError(
            f"{tasks_path}: {len(missing)} measured task(s) are not in this task file, e.g. {missing[0]!r}"
        )


def build_report(
    baseline_dir: Path,
    candidate_dir: Path,
    tasks_path: Path,
    world: str,
    gate_json: Path | None = None,
    out: Path = Path("report.html"),
    extra_agents: ExtraAgents | None = None,
    max_flips: int = 20,
    verdict: str = "strict",
    history: Sequence[IterationHeadline] | None = None,
) -> Path:
    """Write the report to ``out`` (and its plots to ``out.parent/plots``); returns ``out``. Flips and buckets
    count passes under ``verdict`` (strict or tau2); the summaries are the runs' metrics.json as measured.
    ``history`` (earlier iterations, then this one) adds the iteration-history section."""
    out = Path(out)
    base, cand = load_run(Path(baseline_dir), verdict), load_run(Path(candidate_dir), verdict)
    tasks = {t.id: t for t in read_tasks(tasks_path)}
    _check_same_tasks(base, cand, tasks, Path(tasks_path))
    for run_dir in (baseline_dir, candidate_dir):
        try:
            recorded = check_provenance(Path(run_dir), None, Path(tasks_path))
        except ProvenanceError as exc:
            raise ReportInputError(str(exc)) from None
        if recorded is not None and recorded.world != world and not Path(world).exists():  # a name, not a folder
            raise ReportInputError(f"{run_dir}: measured in world {recorded.world!r}, but --world is {world!r}")
    gate = read_gate(Path(gate_json)) if gate_json else None
    if gate is not None and gate_json:
        check_gate_matches(gate, Path(gate_json), base.path, cand.path, Path(tasks_path))
    runs: dict[str, MeasureSummary] = {"baseline": base.summary, "candidate": cand.summary, **_extras(extra_agents)}
    k = min(base.summary.trials_per_task, cand.summary.trials_per_task)
    out.parent.mkdir(parents=True, exist_ok=True)
    pl = _Plots(out.parent / "plots")
    flips = find_flips(base, cand)
    sections = [
        section("overview", "Overview", _overview(runs, k)),
        _pass_section({k_: runs[k_] for k_ in ("baseline", "candidate")}, pl),
        template_section(base, cand, tasks, k),
        _failure_section({k_: runs[k_] for k_ in ("baseline", "candidate")}, pl),
        cost_section(runs, pl),
        _bucket_section(runs, base, cand, pl),
        _gate_section(gate, pl),
        *([history_section(history, pl)] if history else []),
        _flip_section(flips, base, cand, tasks, max_flips),
        verdict_section({"baseline": base, "candidate": cand}),
    ]
    nav = join(
        tag("a", t, href=f"#{i}")
        for i, t in (
            ("overview", "Overview"),
            ("pass-k", "pass^k"),
            ("templates", "Templates"),
            ("failure-modes", "Failure modes"),
            ("cost", "Cost"),
            ("buckets", "Buckets"),
            ("gate", "Gate"),
            *([("iterations", "Iterations")] if history else []),
            ("flips", "Flips"),
            ("verdicts", "Verdicts"),
        )
    )
    meta = (
        f"world {world} · {len(tasks)} tasks in {Path(tasks_path).name} · baseline {base.agent} "
        f"({base.path.name}) · candidate {cand.agent} ({cand.path.name}) · passes by the {verdict} verdict"
    )
    header = join([tag("h1", "agentloop report: baseline vs candidate"), tag("div", meta, cls="meta"), tag("nav", nav)])
    atomic_write(out, page("agentloop report", header, sections))
    log.info("report → %s (%d plots, %d flips)", out, len(pl.written), len(flips))
    return out
