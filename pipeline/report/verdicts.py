"""Where the two verdicts disagree: trials our strict verdict and the τ²-compatible reward score differently.

The strict verdict also holds the agent to authorization, confirmation and domain invariants, and ignores how
the chat ended; τ²-bench's reward looks at the end state (and its reward basis) only, and scores a chat that
neither side ended as 0. Each disagreeing trial is listed with what failed on the failing side.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.report.html import Safe, note, section, table, tag
from pipeline.report.inputs import RunData


@dataclass(frozen=True)
class Disagreement:
    task_id: str
    trial: int
    strict: bool
    tau2: bool
    why: str


def disagreements(run: RunData) -> tuple[list[Disagreement], int]:
    """(the disagreeing trials, the trials with both verdicts) of one run."""
    out, both = [], 0
    for (task_id, trial), v in sorted(run.verdicts.items()):
        if v.infra_error or v.tau2 is None:
            continue
        both += 1
        if v.passed == v.tau2.passed:
            continue
        if v.passed:
            why = (
                "τ²: "
                + ", ".join(v.tau2.failed)
                + "".join(f" ({d})" for c in v.tau2.checks if c.reward < 1 for d in c.details[:1])
            )
        else:
            unjudged = f"; τ² left out {', '.join(v.tau2.unjudged)} (no judge)" if v.tau2.unjudged else ""
            why = "strict: " + ", ".join(v.failed_components) + unjudged
        out.append(Disagreement(task_id, trial, v.passed, v.tau2.passed, why))
    return out, both


def verdict_section(runs: dict[str, RunData], max_rows: int = 20) -> Safe:
    body: list[object] = []
    for label, run in runs.items():
        rows, both = disagreements(run)
        strict_only = sum(d.strict for d in rows)
        body.append(tag("h3", f"{label}: {len(rows)} of {both} trials disagree"))
        if not both:
            body.append(note("No verdict in this run carries the τ²-compatible reward (graded before it existed)."))
            continue
        body.append(
            tag("p", f"{strict_only} pass strict only, {len(rows) - strict_only} pass the τ²-compatible reward only.")
        )
        if rows:
            shown = rows[:max_rows]
            cells = [
                [d.task_id, d.trial, "pass" if d.strict else "fail", "pass" if d.tau2 else "fail", d.why] for d in shown
            ]
            body.append(table(["task", "trial", "strict", "τ²", "why"], cells))
            if len(shown) < len(rows):
                body.append(note(f"Showing {len(shown)} of {len(rows)} disagreements."))
    return section("verdicts", "Strict verdict against the τ²-compatible reward", *body)
