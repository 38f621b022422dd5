"""pass@1 and pass^k per task template, baseline beside candidate: a gain over the whole mix can be one template
learned and the rest untouched, and this table shows which templates moved."""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.dataset import Task
from pipeline.metrics import by_template, pp
from pipeline.report.html import Safe, note, pct, section, table
from pipeline.report.inputs import RunData


def template_section(base: RunData, cand: RunData, tasks: Mapping[str, Task], k: int) -> Safe:
    templates = {t: task.provenance.template for t, task in tasks.items()}
    b, c = by_template(base.counts(), templates, k), by_template(cand.counts(), templates, k)
    rows = []
    for name in sorted(set(b) | set(c)):
        fb, fc = b.get(name), c.get(name)
        either = fc or fb
        hb, hc = (f.pass_hat_k if f else None for f in (fb, fc))
        rows.append(
            [
                name,
                either.tasks if either else 0,
                pct(fb.pass_at_1 if fb else None),
                pct(fc.pass_at_1 if fc else None),
                pct(hb),
                pct(hc),
                pp(hc - hb) if hb is not None and hc is not None else "",
            ]
        )
    body: list[object] = [
        note(
            f"Each template's held-out tasks, pass@1 and pass^{k} (mean over its tasks). A whole-mix gain made of"
            " one template shows here as one row moving."
        ),
        table(
            [
                "template",
                "tasks",
                "baseline pass@1",
                "candidate pass@1",
                f"baseline pass^{k}",
                f"candidate pass^{k}",
                "change",
            ],
            rows,
        ),
    ]
    return section("templates", "By template", *body)
