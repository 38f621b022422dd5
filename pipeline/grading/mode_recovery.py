"""Scoring a failure-mode classifier against planted truth: per-mode precision/recall, confusion, dominant accuracy.

Input rows pair the modes planted in a trial (by a flawed agent) with the analysis of that trial. The
confusion matrix counts, per trial, every (planted, detected) pair, with 'none' standing in for an empty
side, so a clean trial with nothing detected lands in (none, none).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

NONE = "none"


class ModeScore(BaseModel):
    model_config = ConfigDict(extra="forbid")

    planted: int = Field(description="Trials where the mode was planted.")
    detected: int = Field(description="Trials where the classifier named the mode.")
    both: int = Field(description="Trials where it was planted and named.")
    precision: float = Field(description="both / detected (1.0 when nothing was detected).")
    recall: float = Field(description="both / planted (1.0 when nothing was planted).")


class RecoveryReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    trials: int
    failed_trials: int
    per_mode: dict[str, ModeScore]
    confusion: dict[str, dict[str, int]] = Field(description="planted → detected → trials (pairs per trial).")
    confusion_single: dict[str, dict[str, int]] = Field(
        description="The same over trials with at most one planted mode, where off-diagonal cells are errors."
    )
    dominant_accuracy: float = Field(description="Share of planted trials whose dominant mode is a planted one.")
    dominant_accuracy_single: float = Field(description="Same, over trials with exactly one planted mode.")
    failed_without_mode: int = Field(description="Failed trials with no mode evidence (dominant None).")
    false_modes_on_clean: int = Field(description="Trials with nothing planted where some mode was detected.")


def score(
    rows: Iterable[tuple[Sequence[str], Sequence[str], str | None, bool]], modes: Sequence[str]
) -> RecoveryReport:
    """`rows`: (planted modes, detected modes, detected dominant mode, trial passed) per trial."""
    labels = [*modes, NONE]
    confusion = {p: dict.fromkeys(labels, 0) for p in labels}
    single = {p: dict.fromkeys(labels, 0) for p in labels}
    counts = {m: [0, 0, 0] for m in modes}
    trials = failed = no_mode = false_clean = 0
    dom_hits = dom_n = single_hits = single_n = 0
    for planted, detected, dominant, passed in rows:
        trials += 1
        failed += not passed
        p, d = set(planted), set(detected)
        no_mode += (not passed) and dominant is None
        false_clean += (not p) and bool(d)
        for m in modes:
            counts[m][0] += m in p
            counts[m][1] += m in d
            counts[m][2] += m in p and m in d
        for a in sorted(p) or [NONE]:
            for b in sorted(d) or [NONE]:
                confusion[a][b] += 1
                if len(p) <= 1:
                    single[a][b] += 1
        if p:
            dom_n += 1
            dom_hits += dominant in p
            if len(p) == 1:
                single_n += 1
                single_hits += dominant in p
    per_mode = {
        m: ModeScore(
            planted=c[0],
            detected=c[1],
            both=c[2],
            precision=round(c[2] / c[1], 4) if c[1] else 1.0,
            recall=round(c[2] / c[0], 4) if c[0] else 1.0,
        )
        for m, c in counts.items()
    }
    return RecoveryReport(
        trials=trials,
        failed_trials=failed,
        per_mode=per_mode,
        confusion=confusion,
        confusion_single=single,
        dominant_accuracy=round(dom_hits / dom_n, 4) if dom_n else 1.0,
        dominant_accuracy_single=round(single_hits / single_n, 4) if single_n else 1.0,
        failed_without_mode=no_mode,
        false_modes_on_clean=false_clean,
    )


def format_report(report: RecoveryReport) -> str:
    """Plain-text tables: per-mode precision/recall, then the confusion matrix."""
    lines = [f"{'mode':<16}{'planted':>8}{'detected':>9}{'both':>6}{'precision':>11}{'recall':>8}"]
    for m, s in report.per_mode.items():
        lines.append(f"{m:<16}{s.planted:>8}{s.detected:>9}{s.both:>6}{s.precision:>11.4f}{s.recall:>8.4f}")
    labels = list(report.confusion)
    for title, matrix in (
        ("confusion (rows planted, columns detected; per trial, every pair)", report.confusion),
        ("confusion over trials with at most one planted mode", report.confusion_single),
    ):
        lines += ["", title, f"{'':<16}" + "".join(f"{c:>16}" for c in labels)]
        for r in labels:
            lines.append(f"{r:<16}" + "".join(f"{matrix[r][c]:>16}" for c in labels))
    lines += [
        "",
        f"trials {report.trials}, failed {report.failed_trials}, failed without mode evidence "
        f"{report.failed_without_mode}, clean trials with a false mode {report.false_modes_on_clean}",
        f"dominant-mode accuracy {report.dominant_accuracy:.4f} (single planted mode: "
        f"{report.dominant_accuracy_single:.4f})",
    ]
    return "\n".join(lines)
