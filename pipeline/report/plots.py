"""The report's plots, drawn with matplotlib's object API (no pyplot state, no display) and saved as PNG.

Each function takes the measured summaries by label (baseline first, candidate second) and returns a Figure;
`to_png` renders it to bytes that go both into the HTML (base64) and to plots/<name>.png for DVC and MLflow.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure

from pipeline.grading.modes import FAILURE_MODES
from pipeline.metrics import BUCKETS, DIFF_KINDS, IterationHeadline, MeasureSummary
from pipeline.report.gate_view import IntervalView

BASELINE, CANDIDATE = "#8a8f98", "#1f6fd1"
EXTRA = ("#e07b00", "#2a9d5c", "#9b4dca", "#c0392b", "#16a2b8")
BUCKET_COLORS = {"always": "#2a9d5c", "flipping": "#f0ad4e", "never": "#c0392b"}


def colors(n: int) -> list[str]:
    """Baseline grey, candidate blue, then distinct colours for extra agents."""
    return ([BASELINE, CANDIDATE, *EXTRA] * (1 + n // 7))[:n]


def to_png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    return buf.getvalue()


def pass_curves(runs: Mapping[str, MeasureSummary]) -> Figure:
    """pass^k (solid, with bootstrap intervals) and pass@k (dashed) for k = 1..K of each run."""
    fig = Figure(figsize=(6.4, 3.8))
    ax = fig.add_subplot()
    for (label, s), color in zip(runs.items(), colors(len(runs)), strict=True):
        ks = sorted(int(k) for k in s.pass_hat_k)
        hat = [s.pass_hat_k[str(k)] for k in ks]
        lo = [hat[i] - s.intervals.get(f"pass_hat_{k}", [hat[i], hat[i]])[0] for i, k in enumerate(ks)]
        hi = [s.intervals.get(f"pass_hat_{k}", [hat[i], hat[i]])[1] - hat[i] for i, k in enumerate(ks)]
        ax.errorbar(ks, hat, yerr=[lo, hi], color=color, marker="o", capsize=3, label=f"{label} pass^k")
        ax.plot(
            ks, [s.pass_at_k[str(k)] for k in ks], color=color, marker="s", ls="--", alpha=0.8, label=f"{label} pass@k"
        )
    ax.set_xlabel("k (trials)")
    ax.set_ylabel("share of tasks")
    ax.set_ylim(-0.02, 1.02)
    # the default locator is a MaxNLocator, which takes `integer`; the stub types the base Locator
    ax.xaxis.get_major_locator().set_params(integer=True)  # type: ignore[call-arg]
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title("pass^k (every time) and pass@k (at least once)")
    return fig


def _grouped_bars(ax, runs: Mapping[str, MeasureSummary], cats: tuple[str, ...], value, title: str) -> None:
    width = 0.8 / max(len(runs), 1)
    for i, ((label, s), color) in enumerate(zip(runs.items(), colors(len(runs)), strict=True)):
        xs = [c + (i - (len(runs) - 1) / 2) * width for c in range(len(cats))]
        vals = [value(s, cat) for cat in cats]
        bars = ax.bar(xs, vals, width=width, color=color, label=label)
        ax.bar_label(bars, labels=[f"{v:.0%}" for v in vals], fontsize=7, padding=1)
    ax.set_xticks(range(len(cats)), [c.replace("_", "\n") for c in cats], fontsize=8)
    ax.set_ylim(0, 1.1)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)


def rate_bars(runs: Mapping[str, MeasureSummary], which: str) -> Figure:
    """Failure-mode (which='failure_modes') or diff-category (which='diff_categories') rates, trials and tasks."""
    cats = FAILURE_MODES if which == "failure_modes" else DIFF_KINDS
    fig = Figure(figsize=(8.8, 3.4))
    for i, unit in enumerate(("trials", "tasks")):
        ax = fig.add_subplot(1, 2, i + 1)
        _grouped_bars(
            ax,
            runs,
            cats,
            lambda s, c, u=unit: getattr(getattr(s, which)[c], u) if c in getattr(s, which) else 0.0,
            f"share of {unit}",
        )
        if i == 0:
            ax.legend(fontsize=8)
    fig.suptitle("failure modes" if which == "failure_modes" else "state diff categories", fontsize=11)
    return fig


def bucket_bars(runs: Mapping[str, MeasureSummary]) -> Figure:
    """Stacked always / flipping / never shares of tasks per run."""
    fig = Figure(figsize=(6.4, 0.9 + 0.55 * len(runs)))
    ax = fig.add_subplot()
    labels = list(runs)[::-1]
    left = [0.0] * len(labels)
    for b in BUCKETS:
        vals = [runs[label].buckets.get(b, 0.0) for label in labels]
        bars = ax.barh(labels, vals, left=left, color=BUCKET_COLORS[b], label=b)
        ax.bar_label(bars, labels=[f"{v:.0%}" if v >= 0.06 else "" for v in vals], label_type="center", fontsize=8)
        left = [a + v for a, v in zip(left, vals, strict=True)]
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of tasks")
    ax.legend(ncols=3, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.35 if len(runs) < 3 else -0.2))
    ax.set_title("consistency over the k trials")
    return fig


def cost_pareto(
    points: Mapping[str, tuple[float, float]], frontier: list[str], k: int, currency: str, spend: str = "cost"
) -> Figure:
    """Cost (or, with `spend="tokens"`, the agent's tokens) per success against pass^k; the Pareto frontier joins
    the non-dominated agents."""
    fig = Figure(figsize=(6.4, 3.8))
    ax = fig.add_subplot()
    for (label, (cost, score)), color in zip(points.items(), colors(len(points)), strict=True):
        on = label in frontier
        ax.scatter(
            [cost],
            [score],
            s=70 if on else 45,
            color=color,
            edgecolors="black" if on else "none",
            zorder=3,
            label=label + (" (frontier)" if on else ""),
        )
    if frontier:
        xs, ys = [points[n][0] for n in frontier], [points[n][1] for n in frontier]
        ax.step(xs, ys, where="post", color="black", lw=1, alpha=0.6, zorder=2)
    ax.set_xlabel(f"cost per success ({currency})" if spend == "cost" else "agent tokens per success")
    ax.set_ylabel(f"pass^{k}")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"{'cost' if spend == 'cost' else 'tokens'} against reliability")
    return fig


def gate_interval(
    primary: IntervalView, margin: float | None, promote: bool | None, mde: float | None = None
) -> Figure:
    """The headline interval of the gate against zero, the margin and (dotted) the minimum detectable effect."""
    fig = Figure(figsize=(6.4, 1.5))
    ax = fig.add_subplot()
    color = "#2a9d5c" if promote else "#c0392b" if promote is False else "#555555"
    est = primary.estimate if primary.estimate is not None else (primary.low + primary.high) / 2
    ax.errorbar([est], [0], xerr=[[est - primary.low], [primary.high - est]], fmt="o", color=color, capsize=6, lw=2)
    ax.axvline(0, color="black", lw=0.8)
    if margin is not None:
        ax.axvline(margin, color="#e07b00", ls="--", lw=1, label=f"margin {margin:+.3f}")
    if mde is not None:
        ax.axvline(mde, color="#555555", ls=":", lw=1, label=f"detectable {mde:+.3f}")
    if margin is not None or mde is not None:
        ax.legend(fontsize=8, loc="upper right")
    span = max(abs(primary.low), abs(primary.high), abs(margin or 0), abs(mde or 0), 0.05) * 1.3
    ax.set_xlim(-span, span)
    ax.set_yticks([])
    ax.set_xlabel(f"{primary.name}: candidate − champion")
    return fig


OUTCOME_COLORS = {"promote": "#2a9d5c", "block": "#c0392b", "inconclusive": "#b7791f"}
MODE_COLORS = ("#e07b00", "#9b4dca", "#16a2b8", "#c0392b", "#2a9d5c")


def iteration_history(points: Sequence[IterationHeadline]) -> Figure:
    """pass^k of the champion each iteration started from and of its candidate (markers coloured by the gate's
    outcome), and the candidate's failure-mode rates, by iteration."""
    fig = Figure(figsize=(9.6, 3.6))
    xs = [h.iteration for h in points]
    k = points[-1].k if points else 0
    ax = fig.add_subplot(1, 2, 1)
    ax.plot(xs, [h.champion.pass_hat_k for h in points], color=BASELINE, marker="o", ls="--", label="champion")
    ax.plot(xs, [h.candidate.pass_hat_k for h in points], color=CANDIDATE, lw=2, label="candidate")
    for outcome, color in OUTCOME_COLORS.items():
        shown = [h for h in points if h.outcome == outcome]
        if shown:
            ax.scatter(
                [h.iteration for h in shown],
                [h.candidate.pass_hat_k for h in shown],
                s=60,
                color=color,
                zorder=3,
                label=f"gate: {outcome}",
            )
    ax.set_title(f"pass^{k} by iteration", fontsize=10)
    ax.set_ylabel("share of tasks")
    ax.legend(fontsize=8, loc="best")
    modes = list(dict.fromkeys(m for h in points for m in h.candidate.modes))
    bx = fig.add_subplot(1, 2, 2)
    for mode, color in zip(modes, MODE_COLORS * (1 + len(modes) // len(MODE_COLORS)), strict=False):
        bx.plot(xs, [h.candidate.modes.get(mode, 0.0) for h in points], color=color, marker="o", label=mode)
    bx.set_title("candidate's failure modes (share of trials)", fontsize=10)
    bx.legend(fontsize=8, loc="best")
    for a in (ax, bx):
        a.set_xlabel("iteration")
        a.set_ylim(-0.02, 1.02)
        a.set_xticks(xs)
        a.grid(alpha=0.3)
    return fig
