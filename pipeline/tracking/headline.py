"""An iteration's headline as the MLflow UI shows it, and the earlier iterations read back from the store.

The iteration run carries only the numbers a person compares, under the same key in every iteration, so the
compare view lines two iterations up row by row:

    candidate/pass_at_1, candidate/pass_hat_<k>, candidate/rate/<mode>    the candidate, measured
    champion/pass_at_1,  champion/pass_hat_<k>,  champion/rate/<mode>     what it started from, measured
    candidate/act_pass_hat_<k>, champion/act_pass_hat_<k>                 pass^k over the tasks whose gold acts
    gain/pass_hat_<k>, gain/low, gain/high, gain/mde                       candidate − champion and the gate's view
    gate/promote                                                           1 when the gate passed
    stage_seconds/<stage>                                                  (sorts after all of them)

Its name says the iteration, what it started from and what came of it (`iter-002 · v1 · promoted v2`); its
description (the `mlflow.note.content` tag) holds the headline sentence and a table. Everything else a stage
measured is on that stage's nested run, under keys without a role (`pass_hat_k/4`), so measure and remeasure
line up too. The headline is also kept whole as a tag, so the report's iteration history reads it back exactly.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from pipeline.metrics import IterationHeadline, pct, pp
from pipeline.tracking.config import TrackingConfig

if TYPE_CHECKING:
    from mlflow.entities import Run

log = logging.getLogger(__name__)

HEADLINE_TAG = "agentloop.headline"


def headline_metrics(h: IterationHeadline) -> dict[str, float]:
    """The iteration run's metrics.

    >>> from pipeline.metrics.headline import example
    >>> m = headline_metrics(example())
    >>> m["candidate/pass_hat_4"], m["champion/rate/invention"], m["gain/pass_hat_4"], m["gate/promote"]
    (0.55, 0.36, 0.235, 1.0)
    >>> sorted(m)[:3]
    ['candidate/pass_at_1', 'candidate/pass_hat_4', 'candidate/rate/invention']
    """
    m: dict[str, float] = {}
    for role, side in (("candidate", h.candidate), ("champion", h.champion)):
        m[f"{role}/pass_hat_{h.k}"] = side.pass_hat_k
        m[f"{role}/pass_at_1"] = side.pass_at_1
        if side.act_pass_hat_k is not None:
            m[f"{role}/act_pass_hat_{h.k}"] = side.act_pass_hat_k
        m |= {f"{role}/rate/{mode}": rate for mode, rate in side.modes.items()}
    m |= {f"gain/pass_hat_{h.k}": h.gain, "gain/low": h.low, "gain/high": h.high}
    if h.mde is not None:
        m["gain/mde"] = h.mde
    m["gate/promote"] = float(h.outcome == "promote")
    return m


def run_name(h: IterationHeadline) -> str:
    """`iter-002 · v1 · promoted v2`: the iteration, what it started from, what came of it.

    >>> from pipeline.metrics.headline import example
    >>> run_name(example()), run_name(example().model_copy(update={"outcome": "block", "champion_moved": False}))
    ('iter-002 · v1 · promoted v2', 'iter-002 · v1 · blocked')
    """
    return f"iter-{h.iteration:03d} · {h.baseline} · {h.outcome_word}"


def description(h: IterationHeadline) -> str:
    """The run's description (markdown): the headline sentence, then champion against candidate."""
    champ = f"champion ({h.baseline})"
    cand = f"candidate (v{h.candidate_version})" if h.candidate_version else "candidate"
    rows = [
        (f"pass^{h.k}", h.champion.pass_hat_k, h.candidate.pass_hat_k),
        *(
            [(f"pass^{h.k} over act tasks", h.champion.act_pass_hat_k, h.candidate.act_pass_hat_k)]
            if h.candidate.act_pass_hat_k is not None or h.champion.act_pass_hat_k is not None
            else []
        ),
        ("pass@1", h.champion.pass_at_1, h.candidate.pass_at_1),
        *[
            (f"{mode.replace('_', ' ')} (share of trials)", h.champion.modes.get(mode), rate)
            for mode, rate in h.candidate.modes.items()
        ],
    ]
    lines = [
        f"**{h.sentence()}**",
        "",
        f"| | {champ} | {cand} | change |",
        "|---|---:|---:|---:|",
        *[
            f"| {name} | {pct(b)} | {pct(c)} | {pp(c - b) if b is not None and c is not None else ''} |"
            for name, b, c in rows
        ],
        "",
        f"Gate: {h.outcome}. Metrics of this run compare across iterations under the same keys "
        f"(candidate/pass_hat_{h.k}, champion/pass_hat_{h.k}, gain/…); each stage's full measurement is on its "
        "nested run.",
    ]
    return "\n".join(lines)


def headline_of(run: Run) -> IterationHeadline | None:
    """The headline an iteration run carries; None for a run logged without one."""
    raw = run.data.tags.get(HEADLINE_TAG)
    if not raw:
        return None
    try:
        return IterationHeadline.model_validate_json(raw)
    except ValidationError as exc:
        log.warning("run %s: unreadable %s tag (%s); left out", run.info.run_id, HEADLINE_TAG, exc.errors()[0]["msg"])
        return None


def store_exists(uri: str) -> bool:
    prefix = "sqlite:///"
    return not uri.startswith(prefix) or Path(uri[len(prefix) :]).exists()


def earlier_iterations(config: TrackingConfig, before: int) -> list[IterationHeadline]:
    """The headlines of iterations 1 .. before-1 from the store, one per iteration: of the finished runs of an
    iteration, the one that ended last. Reading creates nothing: no store file, no experiment → []."""
    if not store_exists(config.tracking_uri):
        return []
    client = config.client()
    exp = client.get_experiment_by_name(config.experiment)
    if exp is None:
        return []
    runs = client.search_runs(
        [exp.experiment_id],
        filter_string="tags.`agentloop.kind` = 'iteration' and attributes.status = 'FINISHED'",
        order_by=["attributes.end_time DESC"],
        max_results=5000,
    )
    latest: dict[int, IterationHeadline] = {}
    for run in runs:
        h = headline_of(run)
        if h is not None and h.iteration < before and h.iteration not in latest:
            latest[h.iteration] = h
    return [latest[i] for i in sorted(latest)]
