"""`python -m pipeline.loop.next_iteration [--write]`: which iteration this run of the loop is, read from the registry.

Retraining continues from the registry, not from the committed params: the next iteration is one past the latest
iteration that moved `champion` (an iteration run whose headline says the champion moved; a champion promoted by
hand counts by its version's `agentloop.iteration` tag), and every iteration after the first starts from the
champion (`baseline.source: champion`). Without a champion (an empty store, a first push) it is iteration 1 from
the committed `baseline.source`. An iteration that was blocked, or measured on a pull request, moved nothing, so
the next run is that iteration again, from the same champion, with whatever changed since.

Each iteration trains in a world of its own through the loop's `world.train_world_per_iteration`
(`Params.train_world`: gen-7, gen-8, ...); the held-out evaluation world and its tasks never change.

`--write` sets `loop.iteration` and `baseline.source` in params.yaml in place (comments and order kept), before
`dvc repro`; `$GITHUB_OUTPUT`, where set, gets `iteration`, `baseline` and `train_world`. A store that cannot be
reached ends the command with one line naming it (exit 1): a run never guesses its iteration.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.errors import AgentloopError, InputError
from pipeline.loop.history import tracking_config
from pipeline.loop.params import Params, load_params

if TYPE_CHECKING:
    from pipeline.tracking import TrackingConfig

log = logging.getLogger(__name__)

CHAMPION_SOURCE = "champion"
EXPECTED_CHAMPION_ENV = "AGENTLOOP_EXPECTED_CHAMPION"
"""The champion a run was planned against, for its promote stage (`--write` puts it in $GITHUB_ENV): a version, or
`none` when there was none yet, so two first iterations racing do not both move `champion`."""


@dataclass(frozen=True)
class NextIteration:
    """What the next run of the loop is: its number, what it starts from, where it trains."""

    iteration: int
    baseline: str
    train_world: str
    eval_world: str
    champion: str | None = None  # the champion's version, when there is one
    last_promoted: int | None = None  # the latest iteration that moved it

    def line(self) -> str:
        start = f"champion v{self.champion}" if self.champion else f"baseline.source {self.baseline}"
        after = f" (iteration {self.last_promoted} promoted it)" if self.last_promoted else ""
        return (
            f"iteration {self.iteration} from {start}{after}; trains in {self.train_world},"
            f" held-out evaluation in {self.eval_world}"
        )


def last_promoted_iteration(config: TrackingConfig) -> tuple[str | None, int | None]:
    """(champion version, the latest iteration that moved `champion`) from the store; (None, None) without one.

    Reads only: an empty store, no registered model or no champion alias read as "no champion yet"."""
    from mlflow.exceptions import MlflowException

    from pipeline.tracking import champion_version, store_exists
    from pipeline.tracking.headline import headline_of

    if not store_exists(config.tracking_uri):
        return None, None
    champion = champion_version(config)
    if champion is None:
        return None, None
    client = config.client()
    latest: int | None = None
    try:
        tag = client.get_model_version(config.model_name, champion).tags.get("agentloop.iteration", "")
        latest = int(tag) if tag.isdigit() else None
    except MlflowException:
        pass
    exp = client.get_experiment_by_name(config.experiment)
    if exp is not None:
        runs = client.search_runs(
            [exp.experiment_id],
            filter_string="tags.`agentloop.kind` = 'iteration' and attributes.status = 'FINISHED'",
            max_results=5000,
        )
        moved = [h.iteration for h in map(headline_of, runs) if h is not None and h.champion_moved]
        if moved:
            latest = max(latest or 0, *moved)
    return champion, latest


def next_iteration(p: Params, config: TrackingConfig | None = None) -> NextIteration:
    """The iteration the registry says comes next, with the params it runs under (TrackingUnavailableError when
    the store cannot be reached)."""
    from pipeline.tracking import check_reachable, tracking_errors

    config = config or tracking_config(p)
    check_reachable(config.tracking_uri)
    with tracking_errors(config.tracking_uri):
        champion, latest = last_promoted_iteration(config)
    if champion is None:
        iteration, baseline = 1, p.baseline.source
    else:
        iteration, baseline = (latest or 0) + 1, CHAMPION_SOURCE
    planned = p.model_copy(update={"loop": p.loop.model_copy(update={"iteration": iteration})})
    try:
        world = planned.train_world()
    except ValueError as exc:
        raise InputError(f"params.yaml: world.train_world: {exc}") from None
    return NextIteration(iteration, baseline, world, p.world.eval_world, champion, latest)


def write_params(path: Path, plan: NextIteration) -> None:
    """Set `loop.iteration` and `baseline.source` in ``path``, keeping its comments and key order."""
    from ruamel.yaml import YAML

    yaml = YAML()  # round-trip
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.representer.add_representer(  # `null` stays `null` (ruamel writes nothing)
        type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null")
    )
    data = yaml.load(path.read_text())
    data.setdefault("loop", {})["iteration"] = plan.iteration
    data.setdefault("baseline", {})["source"] = plan.baseline
    with path.open("w") as f:
        yaml.dump(data, f)


def _github_output(plan: NextIteration) -> None:
    """The plan for later steps: outputs, and the champion it was planned against in the job's environment (the
    promote stage moves `champion` only while it is still that one: `none` for a first iteration)."""
    out = os.environ.get("GITHUB_OUTPUT")
    if out:
        with open(out, "a") as f:
            f.write(f"iteration={plan.iteration}\nbaseline={plan.baseline}\ntrain_world={plan.train_world}\n")
    env = os.environ.get("GITHUB_ENV")
    if env:
        with open(env, "a") as f:
            f.write(f"{EXPECTED_CHAMPION_ENV}={plan.champion or 'none'}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.loop.next_iteration", description=__doc__.split("\n")[0])
    parser.add_argument("--params", type=Path, default=Path("params.yaml"), help="params file (default params.yaml)")
    parser.add_argument("--write", action="store_true", help="set loop.iteration and baseline.source in it")
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("AGENTLOOP_LOG", "WARNING"), format="%(name)s: %(message)s")
    try:
        p = load_params(args.params)
        plan = next_iteration(p)
        if args.write:
            write_params(args.params, plan)
            load_params(args.params)  # what was written still loads
    except AgentloopError as exc:  # an unreachable store, params that do not load: one line
        print(f"error: next iteration: {exc}", file=sys.stderr)
        return 1
    print(plan.line())
    _github_output(plan)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
