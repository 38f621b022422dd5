"""`python -m pipeline.loop.summary`: a markdown table of candidate against champion, for CI job summaries."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.loop import paths
from pipeline.metrics import pct, pp


def _load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def _n(d: dict, key: str, digits: int) -> str:
    x = d.get(key)
    return f"{x:,.{digits}f}" if isinstance(x, int | float) else "—"


def job_summary(root: Path = Path(".")) -> str:
    base = _load(root / paths.BASELINE_RUN / "metrics.json")
    cand = _load(root / paths.CANDIDATE_RUN / "metrics.json")
    gate = _load(root / paths.GATE)
    promotion = _load(root / paths.PROMOTION)
    lines = ["## agentloop: candidate against champion", ""]
    if not base or not cand:
        return "\n".join(lines + ["The loop did not produce both measurements; see the job log."]) + "\n"
    lines += [
        f"Champion (baseline): `{base.get('agent')}` · candidate: `{cand.get('agent')}` · "
        f"{cand.get('tasks')} held-out tasks × {cand.get('trials_per_task')} trials",
        "",
        "| metric | champion | candidate | change |",
        "|---|---:|---:|---:|",
    ]

    def row(name: str, b: object, c: object) -> None:
        number = lambda x: x if isinstance(x, int | float) else None  # noqa: E731
        b, c = number(b), number(c)
        change = pp(c - b) if b is not None and c is not None else ""
        lines.append(f"| {name} | {pct(b)} | {pct(c)} | {change} |")

    for k in cand.get("pass_hat_k", {}):
        row(f"pass^{k}", base.get("pass_hat_k", {}).get(k), cand["pass_hat_k"][k])
    for mode, rate in cand.get("failure_modes", {}).items():
        row(f"{mode} (share of trials)", base.get("failure_modes", {}).get(mode, {}).get("trials"), rate["trials"])
    bc, cc = base.get("cost", {}), cand.get("cost", {})
    if bc.get("priced") and cc.get("priced"):
        lines.append(
            f"| cost per success ({cc.get('currency', '')}) | {_n(bc, 'cost_per_success', 4)} | "
            f"{_n(cc, 'cost_per_success', 4)} | |"
        )
    else:  # unpriced: a price of 0 says nothing, the agent's tokens do
        lines.append(
            f"| agent tokens per success (not priced) | {_n(bc, 'tokens_per_success', 0)} | "
            f"{_n(cc, 'tokens_per_success', 0)} | |"
        )
    lines.append("")
    if gate:
        ph = gate.get("pass_hat_k", {})
        outcome = gate.get("outcome") or ("promote" if gate.get("promote") else "block")
        verdict = {"promote": "**PROMOTE**", "inconclusive": "**INCONCLUSIVE**"}.get(outcome, "**BLOCKED**")
        lines.append(
            f"Gate: {verdict} — pass^{ph.get('k')} gain {pp(ph.get('diff'))} "
            f"(interval {pp(ph.get('low'))} … {pp(ph.get('high'))}, margin {pp(ph.get('margin'))})"
        )
        lines += [f"- {r}" for r in gate.get("reasons", [])]
    if promotion:
        moved = "moved to the candidate" if promotion.get("champion_moved") else "unchanged"
        if promotion.get("promotion_allowed") is False:
            moved += " (promotion off: only a push to main moves it)"
        lines += ["", f"Registry: version {promotion.get('model_version')} is `challenger`; `champion` {moved}."]
        if promotion.get("iteration"):
            lines.append(
                f"Iteration {promotion['iteration']} (its number from the registry:"
                " `python -m pipeline.loop.next_iteration`)."
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(job_summary(), end="")
