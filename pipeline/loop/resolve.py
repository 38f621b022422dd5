"""params.yaml resolved before any stage runs: every name in it must name something that exists.

Validation (`pipeline.loop.params`) checks shapes and ranges; this checks meaning, once, in every stage script
before the stage does any work: the domain resolves, both worlds load in it and differ, the user simulator and
the judge specs parse, the agent specs in `baseline.source` and `train.method` name an agent this machine can
make, and the Ray address has a form Ray reads (a `ray://` address needs Ray's client extra). Each problem is one
line naming the key, raised as ParamsError.
"""

from __future__ import annotations

import re

from pipeline.errors import AgentloopError, InputError
from pipeline.loop.params import Params, ParamsError

_RAY_ADDRESS = re.compile(r"^(auto|local|ray://[^:/\s]+:\d+|[^:/\s]+:\d+)$")


def resolve_params(params: Params, source: str = "params.yaml") -> None:
    """Raise ParamsError naming the first key of `params` that names nothing usable (see the module)."""
    for key, check in (
        ("world.domain", lambda: _domain(params)),
        ("world.eval_world", lambda: _world(params, params.world.eval_world)),
        ("world.train_world", lambda: _world(params, params.world.train_world)),
        ("world", lambda: _worlds_differ(params)),
        ("measure.user", lambda: _user(params.measure.user)),
        ("measure.judge", lambda: _judge(params.measure.judge)),
        ("measure.ray_address", lambda: _ray_address(params.measure.ray_address)),
        ("measure.tasks", lambda: _tasks_file(params.measure.tasks)),
        ("baseline.source", lambda: _agent(params.baseline.source)),
        ("train.method", lambda: _agent(params.train.method)),
    ):
        try:
            check()
        except ParamsError:
            raise
        except (AgentloopError, OSError) as exc:  # OSError: a file named in params.yaml that cannot be read
            raise ParamsError(f"{source}: {key}: {exc}") from None


def _domain(params: Params) -> None:
    from pipeline.world import resolve_domain

    resolve_domain(params.world.domain)


def _world(params: Params, ref: str) -> None:
    from pipeline.world import load_world

    load_world(ref, params.world.domain)  # cached: the stage that needs it loads it once


def _worlds_differ(params: Params) -> None:
    from pipeline.world import load_world

    train = load_world(params.world.train_world, params.world.domain)
    held_out = load_world(params.world.eval_world, params.world.domain)
    if train.fingerprint == held_out.fingerprint and held_out.domain.provides("generator"):
        # A domain without a generator serves both from one world, its customers split in two disjoint
        # partitions (pipeline.authoring.partition); one with a generator must train in a generated world.
        raise InputError(
            f"train_world {params.world.train_world!r} is the evaluation world {params.world.eval_world!r}: training"
            " data must come from another world"
        )


def _user(spec: str) -> None:
    from pipeline.users import make_user

    make_user(spec)  # parses the spec and reads the endpoint variables; nothing is called


def _judge(spec: str | None) -> None:
    if spec in (None, "", "none"):
        return  # no judge: nothing to import (the client library takes seconds)
    from pipeline.grading import make_judge

    make_judge(spec)


def _ray_address(address: str | None) -> None:
    if address is None:
        return
    if not _RAY_ADDRESS.match(address):
        raise InputError(f"{address!r}: expected HOST:PORT, ray://HOST:PORT, auto or local")
    from pipeline.trials import check_client

    check_client(address)


def _agent(value: str) -> None:
    """`agent:<spec>`: an agent this machine can make (a checkpoint's path and placement, not its weights)."""
    if not value.startswith("agent:"):
        return
    spec = value.removeprefix("agent:")
    kind, _, body = spec.partition(":")
    if kind in ("hf", "vllm"):
        from pathlib import Path

        path = body.partition(",")[0]
        if not path or not (Path(path).is_dir() or _written_by_a_stage(Path(path))):
            raise InputError(f"agent {spec!r}: no checkpoint directory {path!r}")
        return
    if kind == "openai":
        return  # an endpoint's model: checked when called
    from pipeline.agents import make_agent

    make_agent(spec)


def _tasks_file(path) -> None:
    """A tasks file to measure: one that exists (or that a stage writes first), and is a file."""
    from pathlib import Path

    if path is None:
        return
    given = Path(path)
    if given.is_dir():
        raise InputError(f"{given} is a folder; give a tasks.jsonl file")
    if not given.is_file() and not _written_by_a_stage(given):
        raise InputError(f"{given} does not exist (and no stage of dvc.yaml writes it)")


def _written_by_a_stage(path, dvc_file: str = "dvc.yaml") -> bool:
    """Whether `path` is (inside) an output of a stage of this pipeline: a checkpoint the loop builds before the
    stage that reads it (`models/embedded`) need not exist when an earlier stage resolves the params."""
    from pathlib import Path

    import yaml

    spec = Path(dvc_file)
    if path.is_absolute() or not spec.is_file():
        return False
    stages = (yaml.safe_load(spec.read_text()) or {}).get("stages", {})
    outs = [next(iter(o)) if isinstance(o, dict) else o for st in stages.values() for o in st.get("outs", [])]
    target = Path(*path.parts)
    return any(target == Path(o) or Path(o) in target.parents for o in outs)
