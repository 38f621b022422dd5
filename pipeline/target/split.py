"""`agentloop target`: split a synthesis budget across the failure modes a measurement found.

Each mode gets a floor (so a mode the agent seems to have fixed is still rehearsed), and the rest of the
budget goes in proportion to rate × weight, by largest remainder so the counts add up to the budget
exactly. Each mode also gets difficulty settings: the probability of each dial that provokes it (a
forgotten email invites an invented one; an "oh, can you also" lets a confirmed write slip; a wrong-status
request tests whether the status was read), scaled up for an agent that already passes most tasks.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from pydantic import Field, ValidationError

from pipeline.dataset import ProvenanceError, check_provenance, file_sha256
from pipeline.dataset.provenance import Provenance
from pipeline.errors import InputError
from pipeline.grading.modes import FAILURE_MODES
from pipeline.outputs import atomic_write
from pipeline.strict import Strict
from pipeline.target.config import TargetConfig

MAX_BUDGET = 100_000
"""The most tasks one split may ask for: far above a training set (160 by default), far below a synthesis that
would never end (a budget of 1e20)."""


class ModeTarget(Strict):
    count: int = Field(ge=0, le=MAX_BUDGET, description="Tasks to synthesize for this mode.")
    rate: float = Field(description="The measured failure-mode rate.")
    weight: float
    score: float = Field(description="rate × weight.")
    floor: int = Field(description="Floor applied to this mode.")
    dials: dict[str, float] = Field(description="Dial → probability for tasks aimed at this mode.")
    reasons: list[str] = Field(default_factory=list)


class Targets(Strict):
    budget: int
    agent: str | None = None
    source: str | None = Field(default=None, description="The metrics file the split was computed from.")
    pass_at_1: float | None = None
    modes: dict[str, ModeTarget]
    cells: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Mode → coverage cell (template/dial/outcome) → share of that mode's measured failures there"
        " (`pipeline.target.cells`); empty when the split saw only rates.",
    )
    provenance: Provenance | None = Field(
        default=None,
        description="The measured run's record (`pipeline.dataset.provenance`: domain, world, task file), with the"
        " digests of the metrics and verdicts read under `sources`; None when the run has none.",
    )

    def text(self) -> str:
        """The file's text (no `provenance` key where there is no record)."""
        data = self.model_dump(mode="json", exclude={"provenance"})
        if self.provenance is not None:
            data["provenance"] = self.provenance.model_dump(exclude_none=True)
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, self.text())

    @classmethod
    def read(cls, path: Path) -> Targets:
        try:
            return cls.model_validate_json(Path(path).read_bytes())  # bytes: a file not UTF-8 fails validation
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"])) or "the file"
            raise InputError(f"{path}: not a targets.json of `agentloop target`: {where}: {first['msg']}") from None


class MetricsReadError(InputError, ValueError):
    """A metrics file without the fields a split needs; the message names the file and the field."""


def read_rates(path: Path, rate: str = "trials") -> tuple[dict[str, float], float | None, str | None]:
    """(mode → rate, pass@1, agent) from a measure run's metrics.json."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # ValueError: not JSON, or not UTF-8 text
        raise MetricsReadError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        what = type(data).__name__
        raise MetricsReadError(f"{path}: expected a JSON object, got a {what} (is this a measure run's metrics.json?)")
    modes = data.get("failure_modes")
    if not isinstance(modes, dict):
        raise MetricsReadError(f"{path}: field failure_modes missing (is this a measure run's metrics.json?)")
    rates = {}
    for m, v in modes.items():
        value = v.get(rate) if isinstance(v, dict) else v
        if not isinstance(value, int | float):
            raise MetricsReadError(f"{path}: field failure_modes.{m}.{rate} is not a number")
        rates[m] = float(value)
    return rates, data.get("pass_at_1"), data.get("agent")


def split_budget(
    rates: dict[str, float], budget: int, config: TargetConfig | None = None, pass_at_1: float | None = None
) -> dict[str, ModeTarget]:
    """Mode → target; counts sum to `budget`, each weighted mode gets min(floor, its even share) at least."""
    cfg = config or TargetConfig()
    modes = [m for m in FAILURE_MODES if cfg.weights.get(m, 0.0) > 0]
    if budget < 0:
        raise InputError("budget must be >= 0")
    if budget > MAX_BUDGET:
        raise InputError(f"budget {budget} is more tasks than one synthesis makes ({MAX_BUDGET} at most)")
    if not modes:
        raise InputError("every mode has weight 0: nothing to target")
    scores = {m: max(rates.get(m, 0.0), 0.0) * cfg.weights[m] for m in modes}
    floor = min(cfg.floor, budget // len(modes))
    rest = budget - floor * len(modes)
    total = sum(scores.values())
    shares = {m: (scores[m] / total if total > 0 else 1.0 / len(modes)) for m in modes}
    exact = {m: rest * shares[m] for m in modes}
    counts = {m: floor + math.floor(exact[m]) for m in modes}
    left = budget - sum(counts.values())
    frac = {m: round(exact[m] - math.floor(exact[m]), 9) for m in modes}  # rounded: ties break by score
    for m in sorted(modes, key=lambda m: (-frac[m], -scores[m], modes.index(m)))[:left]:
        counts[m] += 1
    scale = 0.5 + pass_at_1 if (cfg.scale_by_pass_rate and pass_at_1 is not None) else 1.0
    out = {}
    for m in modes:
        dials = {d: round(min(1.0, p * scale), 4) for d, p in cfg.dials.get(m, {}).items()}
        reasons = [
            f"{cfg.rate} rate {rates.get(m, 0.0):.3f} × weight {cfg.weights[m]:g} = {scores[m]:.3f}"
            f" ({shares[m]:.0%} of the weighted failures{'' if total > 0 else '; none measured: even split'})",
            f"floor {floor} + {counts[m] - floor} of the remaining {rest} = {counts[m]} of {budget}",
        ]
        if scale != 1.0:
            reasons.append(f"dial probabilities × {scale:.2f} (0.5 + pass@1 {pass_at_1:.3f})")
        out[m] = ModeTarget(
            count=counts[m],
            rate=round(rates.get(m, 0.0), 6),
            weight=cfg.weights[m],
            score=round(scores[m], 6),
            floor=floor,
            dials=dials,
            reasons=reasons,
        )
    return out


def make_targets(
    metrics: Path,
    budget: int,
    config: TargetConfig | None = None,
    verdicts: Path | None = None,
    tasks: Path | None = None,
    domain: str | None = None,
) -> Targets:
    """The split from a measure run's metrics; with its `verdicts` and `tasks` also where each mode failed.

    `domain` names the tasks' domain (its synthesis kit's taxonomy defines the cells); None: the domain the run's
    trajectories (beside `verdicts`) record. The run is checked against `domain` and `tasks` through its provenance
    record, which the targets then carry."""
    from pipeline.target.cells import failure_cells

    cfg = config or TargetConfig()
    if (verdicts is None) != (tasks is None):
        raise InputError("failure cells need both the measure run's verdicts and its tasks file")
    recorded = run_provenance(metrics, verdicts, tasks, domain)
    rates, pass_at_1, agent = read_rates(metrics, cfg.rate)
    modes = split_budget(rates, budget, cfg, pass_at_1)
    cells = (
        failure_cells(verdicts, tasks, domain, targeted=tuple(modes))
        if verdicts is not None and tasks is not None
        else {}
    )
    if recorded is not None:
        sources = {"metrics": file_sha256(metrics), **({"verdicts": file_sha256(verdicts)} if verdicts else {})}
        recorded = recorded.model_copy(update={"sources": sources})
    return Targets(
        budget=budget,
        agent=agent,
        source=str(metrics),
        pass_at_1=pass_at_1,
        modes=modes,
        cells=cells,
        provenance=recorded,
    )


def run_provenance(metrics: Path, verdicts: Path | None, tasks: Path | None, domain: str | None) -> Provenance | None:
    """The record of the run `metrics` (and `verdicts`) come from, checked against the given domain and tasks: a
    run of another domain or task file is refused (its failures would be read in the wrong taxonomy), as are
    metrics and verdicts of two different runs. Without a record, the domain its trajectories name is checked."""
    from pipeline.target.cells import recorded_domain
    from pipeline.world import resolve_domain

    name = resolve_domain(domain).name if domain else None
    by_path = {Path(p).resolve().parent: Path(p).parent for p in (verdicts, metrics) if p is not None}
    folders = list(by_path.values())
    records = [(folder, check_provenance(folder, tasks_path=tasks, domain=name)) for folder in folders]
    found = [(folder, r) for folder, r in records if r is not None]
    if len({r.trajectories_sha256 for _, r in found}) > 1:
        raise ProvenanceError(
            f"{metrics} and {verdicts} are of two different runs ({found[0][0]} and {found[1][0]}): give one run's"
            " metrics and verdicts"
        )
    if found:
        return found[0][1]
    measured = recorded_domain(folders[0])  # a name, or the `module:attribute` a domain was resolved by
    if name is not None and measured is not None and measured != name and resolve_domain(measured).name != name:
        raise ProvenanceError(f"{folders[0]}: measured with domain {measured!r}, given {name!r}")
    return None
