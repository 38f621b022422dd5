"""The gate's decision as a terminal table, for `agentloop gate` and CI logs."""

from __future__ import annotations

from rich.table import Table

from pipeline.gate.decision import GateDecision

OUTCOME_WORD = {"promote": "PROMOTE", "block": "BLOCKED", "inconclusive": "INCONCLUSIVE"}
VERDICT = {
    "promote": "[green]PROMOTE[/green]",
    "block": "[red]BLOCKED[/red]",
    "inconclusive": "[yellow]INCONCLUSIVE[/yellow]",
}


def decision_table(decision: GateDecision) -> Table:
    """One row for the pass^k comparison, one per side of its split by expected outcome (act / refuse), one per
    'got worse' test, the verdict in the title."""
    p = decision.pass_hat_k
    inputs = decision.inputs
    verdict = VERDICT[decision.outcome]
    table = Table(
        title=f"gate: {verdict} — {inputs.n_tasks} held-out tasks, pass^{p.k}, margin {p.margin:+.3f}",
        caption="\n".join(decision.reasons),
        caption_justify="left",
    )
    for col, justify in (
        ("metric", "left"),
        ("candidate", "right"),
        ("champion", "right"),
        ("diff", "right"),
        (f"{p.confidence:.0%} interval / p", "right"),
        ("threshold", "right"),
        ("result", "left"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    champion = "—" if p.champion is None else f"{p.champion:.3f}"
    gain_ok = p.low > p.margin
    table.add_row(
        f"pass^{p.k}",
        f"{p.candidate:.3f}",
        champion,
        f"{p.diff:+.3f}",
        f"[{p.low:+.3f}, {p.high:+.3f}]",
        f"low > {p.margin:+.3f}",
        "[green]ok[/green]" if gain_ok else "[red]not shown better[/red]",
    )
    if p.mde is None and p.se == 0.0:
        table.add_row(
            f"MDE at {p.power:.0%} power", "", "", "—", "se 0.000", "", "[yellow]not estimable (no spread)[/yellow]"
        )
    if p.mde is not None and p.se is not None:
        seeable = p.mde <= p.margin + (p.min_effect or 0.0)
        table.add_row(
            f"MDE at {p.power:.0%} power",
            "",
            "",
            f"{p.mde:+.3f}",
            f"se {p.se:.3f}",
            f"≤ {p.margin + (p.min_effect or 0.0):+.3f}",
            "[green]could see min_effect[/green]"
            if seeable
            else f"[yellow]too coarse: ~{p.tasks_needed} tasks[/yellow]",
        )
    for side, c in decision.by_expected.items():
        if c.candidate is None or c.diff is None:
            table.add_row(f"pass^{p.k} over {side} tasks", "", "", "", "", "", "[yellow]no such tasks[/yellow]")
            continue
        table.add_row(
            f"pass^{p.k} over {side} tasks ({c.tasks})",
            f"{c.candidate:.3f}",
            "—" if c.champion is None else f"{c.champion:.3f}",
            f"{c.diff:+.3f}",
            f"[{c.low:+.3f}, {c.high:+.3f}]",
            "",
            "shown apart",
        )
    for t in decision.tests:
        table.add_row(
            f"{t.name} ({t.better} is better)",
            f"{t.candidate:.3f}",
            f"{t.champion:.3f}",
            f"{t.diff:+.3f}",
            f"p={t.p_value:.4f}",
            f"Holm {t.holm_threshold:.4f}",
            "[red]significantly worse[/red]" if t.worse else "[green]ok[/green]",
        )
    return table
