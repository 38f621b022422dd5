"""Bad inputs, tried as a new user would: each case must end in a clear error (or a refusal the agent reads),
never a crash, a silent wrong result, a hang or lost data.

Each case is a function registered with `@case(item, name)` that provokes one bad input and returns `CLEAR` (with
what it saw) when it was handled, or `silent(...)` / `lost(...)` when it was not. An exception escaping a case
is a crash; a case running past `--timeout` seconds is a hang. Add a case by writing one more function.

    python bench/bench_bad_inputs.py [--timeout 60] [--out bench/results/bad_inputs.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
WORLD = "gen-3-8x20x40"
STATUSES = ("clear_error", "crash", "silent_wrong", "hang", "data_lost", "skipped")


@dataclass
class Outcome:
    status: str
    detail: str


def clear(detail: str) -> Outcome:
    return Outcome("clear_error", detail)


def silent(detail: str) -> Outcome:
    return Outcome("silent_wrong", detail)


def lost(detail: str) -> Outcome:
    return Outcome("data_lost", detail)


@dataclass
class Case:
    item: int
    name: str
    run: Callable[[Path], Outcome]


CASES: list[Case] = []


def case(item: int, name: str):
    def deco(fn: Callable[[Path], Outcome]) -> Callable[[Path], Outcome]:
        CASES.append(Case(item, name, fn))
        return fn

    return deco


class Skip(Exception):
    """A case whose inputs are not on this machine (τ²-bench data)."""


def tau2(name: str) -> Path:
    """τ²-bench's `name` data set (pipeline.tau2.data), or skip the case."""
    from pipeline.tau2.data import Tau2DataNotFound, tau2_data_dir

    try:
        return tau2_data_dir(name)
    except Tau2DataNotFound as exc:
        raise Skip(str(exc)) from None


def raises(fn: Callable[[], object], errors: tuple[type[BaseException], ...], fragment: str) -> Outcome:
    """CLEAR when `fn` raises one of `errors` whose message holds `fragment`; accepted input is a silent wrong
    result; any other exception propagates (a crash)."""
    try:
        got = fn()
    except errors as exc:
        if fragment in str(exc):
            return clear(str(exc).splitlines()[0][:200])
        return silent(f"error without {fragment!r}: {str(exc)[:200]}")
    return silent(f"accepted: {str(got)[:200]}")


def cli(args: list[str], fragment: str, env: dict[str, str] | None = None) -> Outcome:
    """An `agentloop` command that must exit 2 with `fragment` in its message."""
    import logging

    from typer.testing import CliRunner

    from pipeline.cli import app

    handlers = list(logging.root.handlers)
    result = CliRunner().invoke(app, args, env=env)
    logging.root.handlers[:] = handlers  # the command's handler writes to the runner's stream, closed by now
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    text = " ".join(result.output.split())
    if result.exit_code == 2 and fragment in text:
        return clear(text[:200])
    return silent(f"exit {result.exit_code}: {text[:200]}")


# ---- shared inputs ------------------------------------------------------------------------------------------------
_cache: dict[str, object] = {}


def world():
    from pipeline.world.registry import load_world

    return load_world(WORLD)


def tasks(n: int = 6):
    from pipeline.authoring.templates import generate_tasks

    return generate_tasks(world(), n, seed=2)


def runs(tmp: Path) -> dict[str, Path]:
    """Two measured runs (flawed baseline, oracle candidate), their tasks and a gate file, made once."""
    if "runs" not in _cache:
        from pipeline.dataset.io import write_tasks
        from pipeline.gate import GateConfig, decide, write_gate
        from pipeline.measure import MeasureConfig, measure

        root = Path(str(_cache["shared"])) / "runs"
        write_tasks(root / "tasks.jsonl", tasks(8))
        for name, agent in (("baseline", "flawed:invention=0.5"), ("candidate", "oracle")):
            measure(
                MeasureConfig(world=WORLD, tasks=root / "tasks.jsonl", agent=agent, trials=2, resamples=50), root / name
            )
        cfg = GateConfig(k=2, resamples=200)
        write_gate(
            decide(root / "candidate", root / "baseline", root / "tasks.jsonl", world(), cfg), root / "gate.json"
        )
        _cache["runs"] = {"root": root, **{n: root / n for n in ("baseline", "candidate")}}
    return _cache["runs"]  # type: ignore[return-value]


def tau2_retail():
    from pipeline.domains.retail.worlds import load_tau2_domain

    return load_tau2_domain(tau2("retail"))


# ---- item 1: writes after a transfer ------------------------------------------------------------------------------
@case(1, "retail: cancel after transfer_to_human_agents")
def _(tmp: Path) -> Outcome:
    from pipeline.world.tools import execute

    w = world()
    order = next(o for o in w.table("orders").values() if o.status == "pending")
    s = w.session(authenticated_user_id=order.user_id)
    execute(s, "transfer_to_human_agents", {"summary": "human please"})
    event = execute(s, "cancel_pending_order", {"order_id": order.order_id, "reason": "no longer needed"})
    if event.ok or any(s.changed().values()):
        return silent("the write ran after the transfer")
    return clear(event.content)


@case(1, "airline: gold writes after transfer_to_human_agents")
def _(tmp: Path) -> Outcome:
    airline = tau2("airline")
    from pipeline.world.registry import resolve_domain
    from pipeline.world.tools import execute

    w, ts = resolve_domain("airline").require("tau2_importer").load(airline)
    task = next(t for t in ts if any(a.name in w.tools.of_kind("write") for a in t.gold_actions))
    s = w.session(authenticated_user_id=task.customer_user_id)
    execute(s, "transfer_to_human_agents", {"summary": "human please"})
    events = [execute(s, a.name, a.arguments) for a in task.gold_actions]
    if any(e.ok and e.kind == "write" for e in events) or any(s.changed().values()):
        return silent("a write ran after the transfer")
    return clear(next(e.content for e in events if e.kind == "write"))


@case(1, "grader: confirm → transfer → cancel")
def _(tmp: Path) -> Outcome:
    from pipeline.grading import grade
    from pipeline.rollout.runner import run_tool_call
    from pipeline.rollout.trajectory import Message, ToolCall, Trajectory

    retail = tau2_retail()
    task = next(t for t in retail.tasks if t.id == "69")
    w = retail.world
    s, msgs = w.session(), [Message(role="user", content="Cancel #W2417020 please")]
    steps = [
        ("find_user_id_by_name_zip", {"first_name": "Emma", "last_name": "Smith", "zip": "10192"}),
        "I will cancel #W2417020 (no longer needed). Shall I?",
        "Yes.",
        ("transfer_to_human_agents", {"summary": "wants a human"}),
        ("cancel_pending_order", {"order_id": "#W2417020", "reason": "no longer needed"}),
    ]
    for i, step in enumerate(steps):
        if isinstance(step, tuple):
            call = ToolCall(id=f"c{i}", name=step[0], arguments=step[1])
            msgs += [Message(role="assistant", tool_calls=[call]), run_tool_call(s, call)]
        else:
            msgs.append(Message(role="assistant" if step.endswith("?") else "user", content=step))
    traj = Trajectory(task_id="69", trial=0, agent="a", user="u", world=w.name, messages=msgs)
    verdict = grade(w, task, traj)
    if verdict.passed or "static.after_transfer" not in verdict.failed_components:
        return silent(f"graded {'passed' if verdict.passed else verdict.failed_components}")
    return clear(verdict.component("static.after_transfer").details[0])


# ---- item 2: duplicate identities ---------------------------------------------------------------------------------
def _twin_db(**changes) -> dict:
    db = json.loads((tau2("retail") / "db.json").read_text())
    twin = copy.deepcopy(db["users"]["sofia_rossi_8776"])
    twin.update(user_id="sofia_rossi_0001", orders=[], **changes)
    db["users"]["sofia_rossi_0001"] = twin
    return db


@case(2, "world: two users share name + zip")
def _(tmp: Path) -> Outcome:
    from pipeline.domains.retail.state import WorldLoadError
    from pipeline.domains.retail.worlds import world_from_dict

    db = _twin_db(email="other.sofia@example.com")
    return raises(lambda: world_from_dict(db, source="db.json"), (WorldLoadError,), "'sofia_rossi_0001'")


@case(2, "world: emails differ only in case")
def _(tmp: Path) -> Outcome:
    from pipeline.domains.retail.state import WorldLoadError
    from pipeline.domains.retail.worlds import world_from_dict

    db = json.loads((tau2("retail") / "db.json").read_text())
    sofia = db["users"]["sofia_rossi_8776"]
    db = _twin_db(email=sofia["email"].upper(), address={**sofia["address"], "zip": "00000"})
    return raises(lambda: world_from_dict(db, source="db.json"), (WorldLoadError,), "share the email")


# ---- item 4: silent wrong results ---------------------------------------------------------------------------------
def _validate(tmp: Path, edit: Callable[[list], None], fragment: str) -> Outcome:
    from pipeline.dataset.io import write_tasks

    ts = tasks()
    edit(ts)
    write_tasks(path := tmp / "tasks.jsonl", ts)
    return cli(["tasks", "validate", str(path), "--world", WORLD], fragment)


@case(4, "tasks validate: gold action names an unknown tool")
def _(tmp: Path) -> Outcome:
    from pipeline.dataset.task import Action

    return _validate(tmp, lambda ts: ts[0].gold_actions.append(Action(name="refund_all")), "unknown tool 'refund_all'")


@case(4, "tasks validate: gold write names a missing order")
def _(tmp: Path) -> Outcome:
    from pipeline.dataset.task import Action

    bad = Action(name="cancel_pending_order", arguments={"order_id": "#W0000000", "reason": "no longer needed"})
    return _validate(tmp, lambda ts: ts[0].gold_actions.append(bad), "refused (not_found)")


@case(4, "tasks validate: impossible check status")
def _(tmp: Path) -> Outcome:
    from pipeline.dataset.task import OrderStatusCheck

    order_id = next(iter(world().table("orders")))
    check = OrderStatusCheck(order_id=order_id, status="teleported")
    return _validate(tmp, lambda ts: ts[0].checks.append(check), "impossible status 'teleported'")


@case(4, "measure: tasks written for another world (run dir kept)")
def _(tmp: Path) -> Outcome:
    from pipeline.dataset.io import write_tasks

    ts = tasks()
    ts[1].world = "gen-99"
    write_tasks(path := tmp / "tasks.jsonl", ts)
    (run := tmp / "run").mkdir()
    (run / "metrics.json").write_text("{}")
    out = cli(["measure", "--world", WORLD, "--tasks", str(path), "--out", str(run), "--trials", "1"], "gen-99")
    if (run / "metrics.json").read_text() != "{}":
        return lost("an earlier metrics.json was overwritten")
    return out


def _report(tmp: Path, candidate: Path, gate: Path, fragment: str) -> Outcome:
    r = runs(tmp)
    (out := tmp / "report.html").write_text("earlier report")
    args = ["report", "--baseline", str(r["baseline"]), "--candidate", str(candidate), "--tasks"]
    args += [str(r["root"] / "tasks.jsonl"), "--world", WORLD, "--gate", str(gate), "--out", str(out)]
    result = cli(args, fragment)
    if out.read_text() != "earlier report" and result.status == "clear_error":
        return lost("the earlier report was overwritten by a refused run")
    return result


def _cut_candidate(tmp: Path, keep: int) -> Path:
    import shutil

    cand = tmp / "candidate"
    shutil.copytree(runs(tmp)["candidate"], cand)
    lines = (cand / "trajectories.jsonl").read_text().splitlines(keepends=True)
    (cand / "trajectories.jsonl").write_text("".join(lines[:keep]))
    return cand


@case(4, "report: empty candidate trajectories")
def _(tmp: Path) -> Outcome:
    return _report(tmp, _cut_candidate(tmp, 0), runs(tmp)["root"] / "gate.json", "0 trials, but metrics.json")


@case(4, "report: truncated candidate trajectories")
def _(tmp: Path) -> Outcome:
    return _report(tmp, _cut_candidate(tmp, 5), runs(tmp)["root"] / "gate.json", "5 trials, but metrics.json")


@case(4, "report: gate file about another run")
def _(tmp: Path) -> Outcome:
    gate = json.loads((runs(tmp)["root"] / "gate.json").read_text())
    gate["inputs"]["candidate"]["trajectories_sha256"] = "0" * 64
    (path := tmp / "gate.json").write_text(json.dumps(gate))
    return _report(tmp, runs(tmp)["candidate"], path, "the gate decided on another candidate file")


for _spec in ("hf:models/embedded,max_new_tokens=-5", "hf:models/embedded,max_new_tokens=inf"):

    @case(4, f"agent spec {_spec}")
    def _(tmp: Path, spec: str = _spec) -> Outcome:
        from pipeline.agents.registry import UnknownAgentError, make_agent

        return raises(lambda: make_agent(spec), (UnknownAgentError,), "max_new_tokens")


def _params(tmp: Path, text: str, fragment: str) -> Outcome:
    from pipeline.loop.params import ParamsError, load_params

    (path := tmp / "params.yaml").write_text(text)
    return raises(lambda: load_params(path), (ParamsError,), fragment)


@case(4, "params: measure.trials: true")
def _(tmp: Path) -> Outcome:
    return _params(tmp, "measure:\n  trials: true\n", "measure.trials")


@case(4, "params: a key given twice")
def _(tmp: Path) -> Outcome:
    return _params(tmp, "measure:\n  trials: 4\n  trials: 2\n", "duplicate key 'trials'")


@case(4, "params: empty file")
def _(tmp: Path) -> Outcome:
    return _params(tmp, "", "empty file")


@case(4, "params: gate.k above measure.trials")
def _(tmp: Path) -> Outcome:
    return _params(tmp, "measure:\n  trials: 2\ngate:\n  k: 4\n", "gate.k=4 exceeds measure.trials=2")


@case(4, "agent spec openai:MODEL without a base URL")
def _(tmp: Path) -> Outcome:
    from pipeline.agents.registry import UnknownAgentError, make_agent

    saved = {k: os.environ.pop(k) for k in ("AGENTLOOP_BASE_URL", "OPENAI_BASE_URL") if k in os.environ}
    try:
        t0 = time.perf_counter()
        out = raises(lambda: make_agent("openai:some-model"), (UnknownAgentError,), "AGENTLOOP_BASE_URL")
        return out if time.perf_counter() - t0 < 1 else silent("took over a second to refuse")
    finally:
        os.environ.update(saved)


# ---- item 8: budgets per call -------------------------------------------------------------------------------------
@case(8, "one assistant message with 10,000 write calls")
def _(tmp: Path) -> Outcome:
    from pipeline.dataset.task import Provenance, Task, UserScript
    from pipeline.rollout.protocols import UserReply
    from pipeline.rollout.runner import Limits, run_episode
    from pipeline.rollout.trajectory import Message, ToolCall

    w = world()
    order = next(o for o in w.table("orders").values() if o.status == "pending")
    args = {"order_id": order.order_id, "reason": "no longer needed"}
    calls = [ToolCall(id=f"c{i}", name="cancel_pending_order", arguments=args) for i in range(10_000)]

    class Agent:
        name = "burst"

        def start(self, info):
            replies = iter([Message(role="assistant", tool_calls=calls), Message(role="assistant", content="Done.")])
            return type("E", (), {"act": lambda self, m: next(replies)})()

    class User:
        name = "u"

        def start(self, info):
            return type("E", (), {"respond": lambda self, m: UserReply("go")})()

    task = Task(id="burst", world=w.name, user_script=UserScript(goal="g"), provenance=Provenance(source="eval"))
    session = w.session(authenticated_user_id=order.user_id)
    run_episode(w, task, Agent(), User(), limits=Limits(), session=session)
    if len(session.log) > Limits().max_tool_calls:
        return silent(f"{len(session.log)} calls ran against the world")
    return clear(f"{len(session.log)} calls ran, the rest were answered 'not run'")


# ---- trust by mechanism (classes of the wider probe round; item 45) ----------------------------------------------
AARAV = "aarav_anderson_6237"  # airline: gift card 264.0, credit card; BU71UY business with insurance
_HAT001 = {"flight_number": "HAT001", "date": "2024-05-29"}  # 5 business seats at 387, 1 economy seat


def _airline_session():
    from pipeline.world.registry import load_world

    return load_world(str(tau2("airline")), "airline").session(authenticated_user_id=AARAV)


def _booking(flights, passengers, payments, cabin="business") -> dict:
    people = [{"first_name": "A", "last_name": f"P{i}", "dob": "1990-01-01"} for i in range(passengers)]
    return {
        "user_id": AARAV, "origin": "PHL", "destination": "LGA", "flight_type": "one_way", "cabin": cabin,
        "flights": flights, "passengers": people, "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no",
        "payment_methods": [{"payment_id": pid, "amount": amount} for pid, amount in payments],
    }  # fmt: skip


def _refused(s, name, arguments) -> Outcome:
    from pipeline.world.tools import execute

    event = execute(s, name, arguments)
    if event.ok or any(s.changed().values()):
        return silent(f"{name} ran: {str(event.result)[:160]}")
    return clear(event.content)


@case(45, "class 6: airline booking paid with a negative gift-card amount")
def _(tmp: Path) -> Outcome:
    s = _airline_session()
    out = _refused(
        s, "book_reservation", _booking([_HAT001], 1, [("credit_card_5252591", 887), ("gift_card_5333120", -500)])
    )
    balance = s.get("users", AARAV).payment_methods["gift_card_5333120"].amount
    return out if balance == 264.0 else silent(f"the gift card's balance went from 264.0 to {balance}")


@case(45, "class 6: airline booking listing the same flight twice")
def _(tmp: Path) -> Outcome:
    s = _airline_session()
    out = _refused(s, "book_reservation", _booking([_HAT001, _HAT001], 3, [("credit_card_5252591", 387 * 6)]))
    seats = s.get("flights", "HAT001").dates["2024-05-29"].available_seats["business"]
    return out if seats == 5 else silent(f"business seats went from 5 to {seats}")


@case(45, "class 6: airline passengers changed on a cancelled reservation")
def _(tmp: Path) -> Outcome:
    from pipeline.world.tools import execute

    s = _airline_session()
    execute(s, "cancel_reservation", {"reservation_id": "BU71UY"})
    people = [{"first_name": "New", "last_name": f"N{i}", "dob": "1990-01-01"} for i in range(2)]
    event = execute(s, "update_reservation_passengers", {"reservation_id": "BU71UY", "passengers": people})
    return silent("the cancelled reservation's passengers changed") if event.ok else clear(event.content)


def _run_files(tmp: Path) -> dict[str, Path]:
    r = runs(tmp)
    return {"tasks": r["root"] / "tasks.jsonl", "run": r["candidate"]}


@case(45, "class 3: rollout --out onto its own tasks file")
def _(tmp: Path) -> Outcome:
    from pipeline.dataset.io import write_tasks

    write_tasks(path := tmp / "tasks.jsonl", tasks(2))
    before = path.read_bytes()
    out = cli(["rollout", "--world", WORLD, "--tasks", str(path), "--out", str(path)], "is the --tasks input")
    return out if path.read_bytes() == before else lost("the tasks file was overwritten by trajectories")


@case(45, "class 3: gate --out onto the candidate's trajectories file")
def _(tmp: Path) -> Outcome:
    import shutil

    f = _run_files(tmp)
    shutil.copytree(f["run"], run := tmp / "candidate")
    before = (run / "trajectories.jsonl").read_bytes()
    args = ["gate", "--candidate", str(run), "--tasks", str(f["tasks"]), "--world", WORLD, "--k", "2"]
    out = cli([*args, "--out", str(run / "trajectories.jsonl")], "--candidate input")
    return out if (run / "trajectories.jsonl").read_bytes() == before else lost("trajectories.jsonl overwritten")


@case(45, "class 3: curate --out onto its pool folder")
def _(tmp: Path) -> Outcome:
    import shutil

    f = _run_files(tmp)
    shutil.copytree(f["run"], pool := tmp / "pool")
    before = sorted(p.name for p in pool.iterdir())
    args = ["curate", "--pool", str(pool), "--tasks", str(f["tasks"]), "--world", WORLD, "--agent", "oracle"]
    out = cli([*args, "--probes", "1", "--out", str(pool)], "is the --pool input")
    after = sorted(p.name for p in pool.iterdir())
    return out if after == before else lost(f"the pool folder now holds {after}")


@case(45, "class 3: gate --out is a folder")
def _(tmp: Path) -> Outcome:
    f = _run_files(tmp)
    args = ["gate", "--candidate", str(f["run"]), "--tasks", str(f["tasks"]), "--world", WORLD, "--k", "2"]
    return cli([*args, "--out", str(tmp)], "is a folder")


@case(45, "class 3: two measures into one run folder at once")
def _(tmp: Path) -> Outcome:
    import fcntl

    from pipeline.dataset.io import write_tasks

    write_tasks(path := tmp / "tasks.jsonl", tasks(2))
    (run := tmp / "run").mkdir()
    fd = os.open(run, os.O_RDONLY)  # another measure writing the folder holds its lock
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        args = ["measure", "--world", WORLD, "--tasks", str(path), "--trials", "1", "--out", str(run)]
        return cli(args, "being written by another measure")
    finally:
        os.close(fd)


def _params(tmp: Path, text: str, fragment: str) -> Outcome:
    from pipeline.loop.params import ParamsError, load_params

    (path := tmp / "params.yaml").write_text(text)
    return raises(lambda: load_params(path), (ParamsError,), fragment)


@case(45, "class 2: params.yaml temperature .inf")
def _(tmp: Path) -> Outcome:
    return _params(tmp, "measure:\n  temperature: .inf\n", "not a finite number")


@case(45, "class 2: train sft --lr inf")
def _(tmp: Path) -> Outcome:
    f = _run_files(tmp)
    base, data = ROOT / "models" / "embedded", f["run"] / "trajectories.jsonl"
    args = ["train", "sft", "--base", str(base), "--data", str(data), "--tasks", str(f["tasks"]), "--lr", "inf"]
    # refused as not finite or as over the learning rate's bound: either way the line names the option
    return cli([*args, "--max-steps", "2", "--batch-size", "1", "--out", str(tmp / "sft")], "'--lr'")


@case(45, "class 2: one trial lost to an infrastructure error")
def _(tmp: Path) -> Outcome:
    from pipeline.dataset.io import write_tasks
    from pipeline.measure import MeasureConfig, measure
    from pipeline.measure import run as measure_run
    from pipeline.metrics.errors import MetricsInputError
    from pipeline.rollout.protocols import InfrastructureError

    ts = tasks(3)
    write_tasks(path := tmp / "tasks.jsonl", ts)
    real = measure_run.make_agent

    class Down:
        def __init__(self, inner):
            self.inner, self.name = inner, inner.name

        def start(self, info):
            if (info.task.id, info.trial) == (ts[1].id, 0):
                raise InfrastructureError("endpoint down")
            return self.inner.start(info)

    measure_run.make_agent = lambda spec, d: Down(real(spec, d))
    try:
        measure(MeasureConfig(world=WORLD, tasks=path, agent="oracle", trials=2, resamples=20), tmp / "run")
    except MetricsInputError as exc:
        return silent(f"the run ended without metrics: {exc}")
    finally:
        measure_run.make_agent = real
    metrics = json.loads((tmp / "run" / "metrics.json").read_text())
    if metrics.get("infra_errors") != 1 or ts[1].id not in metrics.get("short_tasks", {}):
        return silent(f"the lost trial is not reported: {metrics.get('infra_errors')}")
    return clear(f"metrics written; infra_errors 1, short_tasks {metrics['short_tasks']}")


@case(45, "class 2: tasks validate: a check the task's own gold fails")
def _(tmp: Path) -> Outcome:
    from pipeline.dataset.task import ToolNotCalledCheck

    def edit(ts):
        t = next(t for t in ts if any(a.name == "cancel_pending_order" for a in t.gold_actions))
        t.checks.append(ToolNotCalledCheck(tool="cancel_pending_order"))

    return _validate(tmp, edit, "contradicts the task's gold actions")


@case(45, "class 4: rollout --flaw-rate 7")
def _(tmp: Path) -> Outcome:
    from pipeline.dataset.io import write_tasks

    write_tasks(path := tmp / "tasks.jsonl", tasks(2))
    args = ["rollout", "--world", WORLD, "--tasks", str(path), "--agent", "flawed", "--flaw-rate", "7"]
    return cli([*args, "--out", str(tmp / "r.jsonl")], "'--flaw-rate'")


@case(45, "class 4: report --verdict x")
def _(tmp: Path) -> Outcome:
    r = runs(tmp)
    args = ["report", "--baseline", str(r["baseline"]), "--candidate", str(r["candidate"])]
    args += ["--tasks", str(r["root"] / "tasks.jsonl"), "--world", WORLD, "--verdict", "x"]
    return cli([*args, "--out", str(tmp / "r.html")], "--verdict 'x'")


@case(45, "class 4: hf agent with dtype=int4")
def _(tmp: Path) -> Outcome:
    from pipeline.dataset.io import write_tasks

    write_tasks(path := tmp / "tasks.jsonl", tasks(1))
    args = ["measure", "--world", WORLD, "--tasks", str(path), "--trials", "1", "--out", str(tmp / "run")]
    return cli([*args, "--agent", f"hf:{ROOT / 'models' / 'embedded'},dtype=int4"], "dtype 'int4'")


@case(45, "class 4: tasks validate on a folder")
def _(tmp: Path) -> Outcome:
    return cli(["tasks", "validate", str(tmp)], "not a regular file")


def _stage(tmp: Path, text: str, fragment: str) -> Outcome:
    import subprocess

    (path := tmp / "params.yaml").write_text(text)
    env = {**os.environ, "AGENTLOOP_PARAMS": str(path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "stages" / "target.py")], cwd=tmp, env=env, capture_output=True, text=True
    )
    last = (done.stderr.strip().splitlines() or [""])[-1]
    if done.returncode == 2 and fragment in last:
        return clear(last[:200])
    return silent(f"exit {done.returncode}: {last[:200]}")


@case(45, "class 4: a stage given world.domain: nope")
def _(tmp: Path) -> Outcome:
    return _stage(tmp, "world:\n  domain: nope\n", "world.domain: unknown domain 'nope'")


@case(45, "class 1: a stage given train_world equal to eval_world")
def _(tmp: Path) -> Outcome:
    return _stage(tmp, "world:\n  eval_world: gen-7\n  train_world: gen-7\n", "is the evaluation world")


@case(45, "class 7: params.yaml sets measure.tasks")
def _(tmp: Path) -> Outcome:
    from pipeline.loop.params import ParamsError, load_params

    (path := tmp / "params.yaml").write_text("measure:\n  tasks: data/imported/tasks.jsonl\n")
    try:
        got = load_params(path).measure.tasks
    except ParamsError as exc:
        return silent(f"a documented setting is refused: {exc}")
    return clear(f"measure.tasks = {got}")


@case(45, "class 7: a negative mode weight")
def _(tmp: Path) -> Outcome:
    return _params(tmp, "target:\n  config:\n    weights:\n      invention: -1.0\n", "greater than or equal to 0")


@case(45, "class 7: a dial probability above 1")
def _(tmp: Path) -> Outcome:
    return _params(
        tmp, "target:\n  config:\n    dials:\n      invention:\n        twin: 1.5\n", "less than or equal to 1"
    )


@case(45, "class 7: progress past the announced total")
def _(tmp: Path) -> Outcome:
    from pipeline.progress import Tracker

    tracker = Tracker("synthesize", 6, "tasks", None)
    for _ in range(14):
        tracker.advance()
    line = tracker.line()
    return silent(line) if "14/6" in line else clear(line)


@case(45, "class 1: rollout of airline tasks in a retail world")
def _(tmp: Path) -> Outcome:
    airline = tau2("airline")
    from pipeline.dataset.io import write_tasks
    from pipeline.world.registry import resolve_domain

    _, ts = resolve_domain("airline").require("tau2_importer").load(airline)
    write_tasks(path := tmp / "tasks.jsonl", ts[:6])
    args = ["rollout", "--world", WORLD, "--tasks", str(path), "--out", str(tmp / "r.jsonl")]
    return cli(args, "the task is written for world")


@case(45, "class 5: target budget 1e20")
def _(tmp: Path) -> Outcome:
    r = runs(tmp)
    args = ["target", "--metrics", str(r["baseline"] / "metrics.json"), "--budget", "100000000000000000000"]
    return cli([*args, "--out", str(tmp / "targets.json")], "more tasks than one synthesis makes")


@case(45, "class 4: a run folder whose name holds [ ]")
def _(tmp: Path) -> Outcome:
    from pipeline.dataset.io import write_tasks

    write_tasks(path := tmp / "tasks.jsonl", tasks(1))
    args = ["measure", "--world", WORLD, "--tasks", str(path), "--trials", "1", "--out", str(tmp / "run[bold]")]
    from typer.testing import CliRunner

    from pipeline.cli import app

    result = CliRunner().invoke(app, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    if result.exit_code != 0 or "run[bold]" not in " ".join(result.output.split()):
        return silent(f"exit {result.exit_code}: {' '.join(result.output.split())[-160:]}")
    return clear("measured; the folder's name printed as written")


@case(45, "class 2: import-tau2 of a task with an unknown gold tool")
def _(tmp: Path) -> Outcome:
    import shutil

    shutil.copytree(tau2("airline"), copy := tmp / "airline")
    raw = json.loads((copy / "tasks.json").read_text())
    raw[0]["evaluation_criteria"]["actions"].append({"action_id": "x", "name": "refund_everything", "arguments": {}})
    (copy / "tasks.json").write_text(json.dumps(raw))
    out = cli(["tasks", "import-tau2", "--domain", str(copy), "--out", str(tmp / "t.jsonl")], "refund_everything")
    return out if not (tmp / "t.jsonl").exists() or out.status != "clear_error" else lost("written anyway")


@case(45, "class 1: report on runs measured on different task sets")
def _(tmp: Path) -> Outcome:
    from pipeline.measure import MeasureConfig, measure

    r = runs(tmp)
    fewer = tmp / "tasks.jsonl"
    fewer.write_text("".join((r["root"] / "tasks.jsonl").read_text().splitlines(keepends=True)[:3]))
    measure(MeasureConfig(world=WORLD, tasks=fewer, agent="oracle", trials=2, resamples=20), tmp / "cand")
    args = ["report", "--baseline", str(r["baseline"]), "--candidate", str(tmp / "cand")]
    args += ["--tasks", str(r["root"] / "tasks.jsonl"), "--world", WORLD, "--out", str(tmp / "r.html")]
    return cli(args, "different task sets")


@case(45, "class 1: curate a pool in another world")
def _(tmp: Path) -> Outcome:
    f = _run_files(tmp)
    args = ["curate", "--pool", str(f["run"]), "--tasks", str(f["tasks"]), "--world", "gen-4-8x20x40"]
    out = tmp / "cur"
    return cli([*args, "--agent", "oracle", "--probes", "1", "--out", str(out)], "given 'gen-4-8x20x40'")


def _targets(tmp: Path) -> dict[str, Path]:
    """Targets of the retail baseline, a set synthesized from them, and targets of a measured airline run."""
    if "targets" not in _cache:
        from pipeline.dataset.io import write_tasks
        from pipeline.measure import MeasureConfig, measure
        from pipeline.synth.config import SynthConfig
        from pipeline.synth.synthesize import synthesize
        from pipeline.target import make_targets
        from pipeline.world.registry import load_world

        r, root = runs(tmp), Path(str(_cache["shared"])) / "targets"
        retail = make_targets(r["baseline"] / "metrics.json", 9, None, r["baseline"] / "verdicts.jsonl",
                              r["root"] / "tasks.jsonl")  # fmt: skip
        retail.write(root / "retail.json")
        synthesize(load_world("gen-7"), retail, root / "synth", SynthConfig(max_generations=1),
                   targets_file=root / "retail.json")  # fmt: skip
        air = load_world("gen-1-10x10x10", "airline")
        write_tasks(root / "air.jsonl", air.domain.require("tasks")(air, 6, seed=1))
        config = MeasureConfig(world="gen-1-10x10x10", domain="airline", tasks=root / "air.jsonl", agent="flawed",
                               trials=2, resamples=20)  # fmt: skip
        measure(config, root / "air_run")
        make_targets(root / "air_run" / "metrics.json", 9, None, root / "air_run" / "verdicts.jsonl",
                     root / "air.jsonl").write(root / "airline.json")  # fmt: skip
        _cache["targets"] = {"retail": root / "retail.json", "synth": root / "synth", "airline": root / "airline.json"}
    return _cache["targets"]  # type: ignore[return-value]


def _other_tables(tmp: Path) -> Path:
    """The synthesized set, its record naming a world of the same name with other tables."""
    import shutil

    shutil.copytree(_targets(tmp)["synth"], synth := tmp / "synth")
    record = json.loads((synth / "provenance.json").read_text())
    (synth / "provenance.json").write_text(json.dumps({**record, "world_digest": "0" * 64}))
    return synth


@case(45, "class 1: target --domain airline on a retail run")
def _(tmp: Path) -> Outcome:
    r = runs(tmp)
    args = ["target", "--metrics", str(r["baseline"] / "metrics.json"), "--budget", "9", "--verdicts",
            str(r["baseline"] / "verdicts.jsonl"), "--tasks", str(r["root"] / "tasks.jsonl")]  # fmt: skip
    args += ["--domain", "airline"]
    out = cli([*args, "--out", str(tmp / "t.json")], "measured with domain 'retail', given 'airline'")
    return out if not (tmp / "t.json").exists() else silent("targets written anyway")


@case(45, "class 1: target with metrics of one run and verdicts of another")
def _(tmp: Path) -> Outcome:
    r = runs(tmp)
    args = ["target", "--metrics", str(r["candidate"] / "metrics.json"), "--budget", "9", "--verdicts",
            str(r["baseline"] / "verdicts.jsonl"), "--tasks", str(r["root"] / "tasks.jsonl")]  # fmt: skip
    return cli([*args, "--out", str(tmp / "t.json")], "two different runs")


@case(45, "class 1: synthesize from targets of another domain")
def _(tmp: Path) -> Outcome:
    args = ["synthesize", "--world", "gen-7", "--targets", str(_targets(tmp)["airline"]), "--out", str(tmp / "s")]
    out = cli(args, "measured with domain 'airline', given 'retail'")
    return out if not (tmp / "s").exists() else silent("a set written anyway")


@case(45, "class 1: synthesize from another domain's targets that carry no record")
def _(tmp: Path) -> Outcome:
    data = json.loads(_targets(tmp)["airline"].read_text())
    data.pop("provenance", None)
    (bare := tmp / "targets.json").write_text(json.dumps(data))
    args = ["synthesize", "--world", "gen-7", "--targets", str(bare), "--out", str(tmp / "s")]
    return cli(args, "field cells:")


@case(45, "class 1: curate a retail set in an airline world of the same name")
def _(tmp: Path) -> Outcome:
    synth = _targets(tmp)["synth"]
    args = ["curate", "--pool", str(synth), "--tasks", str(synth / "tasks.jsonl"), "--world", "gen-7", "--domain",
            "airline", "--agent", "oracle", "--probes", "1", "--out", str(tmp / "cur")]  # fmt: skip
    return cli(args, "with domain 'retail', given 'airline'")


@case(45, "class 1: curate a retail set without its record in an airline world of the same name")
def _(tmp: Path) -> Outcome:
    import shutil

    shutil.copytree(_targets(tmp)["synth"], synth := tmp / "synth")
    (synth / "provenance.json").unlink()
    args = ["curate", "--pool", str(synth), "--tasks", str(synth / "tasks.jsonl"), "--world", "gen-7", "--domain",
            "airline", "--agent", "oracle", "--probes", "1", "--out", str(tmp / "cur")]  # fmt: skip
    return cli(args, "trajectory domain 'retail'")


@case(45, "class 1: curate a set made in other tables of the world's name")
def _(tmp: Path) -> Outcome:
    synth = _other_tables(tmp)
    args = ["curate", "--pool", str(synth), "--tasks", str(synth / "tasks.jsonl"), "--world", "gen-7", "--agent",
            "oracle", "--probes", "1", "--out", str(tmp / "cur")]  # fmt: skip
    return cli(args, "world_digest")


@case(45, "class 1: rollout of tasks made in other tables of the world's name")
def _(tmp: Path) -> Outcome:
    synth = _other_tables(tmp)
    args = ["rollout", "--world", "gen-7", "--tasks", str(synth / "tasks.jsonl"), "--out", str(tmp / "r.jsonl")]
    return cli(args, "world_digest")


@case(45, "class 1: train grpo on tasks made in other tables of the world's name")
def _(tmp: Path) -> Outcome:
    synth = _other_tables(tmp)
    (base := tmp / "base").mkdir()
    args = ["train", "grpo", "--base", str(base), "--tasks", str(synth / "tasks.jsonl"), "--out", str(tmp / "m")]
    return cli(args, "world_digest")


# ---- issue 45, the server, the endpoint, resume and the tracking store ----------------------------------------------
def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Engine:
    name, context, max_token_bytes = "fake", 1024, 16

    def generate(self, messages, tools, policy, params):
        from pipeline.rollout.trajectory import Message
        from pipeline.serve.engine import Generation

        return Generation(Message(role="assistant", content="ok"), 5, 1, "stop")


def _served(read_timeout: float, max_connections: int):
    """`agentloop serve`'s app on uvicorn with the server's own protocol (where this version has one)."""
    import uvicorn

    from pipeline.serve import create_app

    kwargs: dict = {}
    try:
        from pipeline.serve.connections import bounded_protocol

        kwargs["http"] = bounded_protocol(read_timeout, max_connections)
    except ImportError:
        pass  # a version without the bounds: uvicorn as it comes
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(_Engine()), port=port, log_level="error", **kwargs))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.time() + 20
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    return server, port


def _reply_within(port: int, head: bytes, seconds: float) -> bytes:
    import socket

    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(head)
    sock.settimeout(seconds)
    try:
        return sock.recv(4096)
    except (TimeoutError, ConnectionResetError):
        return b""
    finally:
        sock.close()


@case(45, "class 7: serve, a client sending its headers a byte at a time")
def _(tmp: Path) -> Outcome:
    server, port = _served(2.0, 64)
    try:
        reply = _reply_within(port, b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n", 10)
    finally:
        server.should_exit = True
    if reply.startswith(b"HTTP/1.1 408"):
        return clear("408 at the 2 s read timeout: " + reply.split(b"\r\n\r\n", 1)[-1].decode()[:120])
    return silent(f"connection still held after 10 s: {reply[:80]!r}")


@case(45, "class 7: serve, 3x its connection limit held open by slow clients")
def _(tmp: Path) -> Outcome:
    import socket

    import httpx

    server, port = _served(5.0, 8)
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(24)]
    try:
        for sock in held:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\n")
        time.sleep(0.3)
        t0 = time.monotonic()
        body = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}
        r = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=3)
        waited = time.monotonic() - t0
    except httpx.TimeoutException:
        return silent("a new request waited past 3 s behind 24 slow clients")
    finally:
        for sock in held:
            sock.close()
        server.should_exit = True
    if r.status_code == 503:
        return clear(f"503 in {waited:.2f} s: {r.json()['error']['message']}")
    return silent(f"HTTP {r.status_code} in {waited:.2f} s with 24 connections held (limit 8)")


@case(45, "class 7: an endpoint answering 3 MB per turn")
def _(tmp: Path) -> Outcome:
    from pipeline.dataset.io import write_tasks
    from pipeline.measure import MeasureConfig, measure
    from pipeline.rollout.runner import Limits
    from tests.agents.fake_openai import FakeOpenAI, completion

    write_tasks(path := tmp / "tasks.jsonl", tasks(1))
    env = {"AGENTLOOP_MAX_RETRIES": "0", "AGENTLOOP_BASE_URL": ""}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with FakeOpenAI(default=lambda body: completion("w" * 3_000_000)) as fake:
            os.environ["AGENTLOOP_BASE_URL"] = fake.base_url
            cfg = MeasureConfig(
                world=WORLD, tasks=path, agent="openai:m", trials=2, resamples=10, limits=Limits(max_turns=6)
            )
            try:
                measure(cfg, tmp / "run")
                message = "measured"
            except Exception as exc:  # noqa: BLE001 - what it said is what is judged
                message = str(exc)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    size = sum(p.stat().st_size for p in (tmp / "run").rglob("*") if p.is_file())
    if size > 1_000_000:
        return silent(f"the run folder holds {size / 1e6:.1f} MB for 2 trials")
    if "byte bound" in message:
        return clear(f"{size} bytes stored; {message[:160]}")
    return silent(f"{size} bytes stored, no bound named: {message[:160]}")


@case(45, "class 3: measure killed with SIGKILL mid-write, then rerun")
def _(tmp: Path) -> Outcome:
    import subprocess

    from pipeline.dataset.io import write_tasks

    write_tasks(path := tmp / "tasks.jsonl", tasks(6))
    args = ["measure", "--world", WORLD, "--tasks", str(path), "--agent", "flawed:invention=0.4", "--trials", "2"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def agentloop(*head: str, out: Path) -> int:
        cmd = [sys.executable, *head, *args, "--out", str(out)]
        return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, timeout=300).returncode

    agentloop("-m", "pipeline.cli", out=tmp / "reference")
    if agentloop("-m", "tests.killpoint", "4", out=tmp / "run") != -9:
        return silent("the run ended before its 4th flush")
    agentloop("-m", "pipeline.cli", out=tmp / "run")
    volatile = {"timings.jsonl", "journal.jsonl"}
    names = sorted(p.name for p in (tmp / "reference").iterdir() if p.is_file() and p.name not in volatile)
    differ = [n for n in names if (tmp / "run" / n).read_bytes() != (tmp / "reference" / n).read_bytes()]
    if differ:
        return silent(f"resumed, not byte-identical: {differ}")
    return clear(f"resumed byte-identical: {', '.join(names)}")


@case(45, "class 3: promote's store in a copied repository")
def _(tmp: Path) -> Outcome:
    import shutil

    from pipeline.tracking.config import TrackingConfig

    def log_one(root: Path, name: str) -> None:
        config = TrackingConfig(tracking_uri=f"sqlite:///{root / 'mlruns.db'}")
        client = config.client()
        run = client.create_run(config.experiment_id(client))
        (note := tmp / f"{name}.txt").write_text(name)
        client.log_artifact(run.info.run_id, str(note))
        client.set_terminated(run.info.run_id)

    (original := tmp / "original").mkdir()
    log_one(original, "first")
    before = sorted(p.name for p in original.rglob("*") if p.is_file())
    shutil.copytree(original, copy := tmp / "copy")
    log_one(copy, "second")
    after = sorted(p.name for p in original.rglob("*") if p.is_file())
    if after != before:
        return lost(f"the copy wrote into the original: {sorted(set(after) - set(before))}")
    return clear("the copy wrote into its own mlartifacts/; the original unchanged")


@case(45, "class 5: promote with the MLflow server down from the start")
def _(tmp: Path) -> Outcome:
    uri = f"http://127.0.0.1:{_free_port()}"
    t0 = time.monotonic()
    try:
        from pipeline.tracking.bounds import TrackingUnavailableError, check_reachable, tracking_errors
    except ImportError:  # a version without the bounds: MLflow's own retries
        from pipeline.tracking.config import TrackingConfig

        TrackingConfig(tracking_uri=uri).client().search_experiments()
        return silent("accepted")
    try:
        with tracking_errors(uri):
            check_reachable(uri)
    except TrackingUnavailableError as exc:
        return clear(f"{time.monotonic() - t0:.1f} s: {exc}")
    return silent("no error")


# ---- a further round: outputs onto devices and worlds, folders as files, other worlds, sizes, params, tools -------
SMALL = "gen-3-4x10x20"


def _small_run(tmp: Path) -> Path:
    """Two tasks of SMALL and an oracle run on them, made once."""
    if "small" not in _cache:
        from pipeline.authoring.templates import generate_tasks
        from pipeline.dataset.io import write_tasks
        from pipeline.measure import MeasureConfig, measure
        from pipeline.world.registry import load_world

        root = Path(str(_cache["shared"])) / "small"
        write_tasks(root / "tasks.jsonl", generate_tasks(load_world(SMALL), 2, seed=1))
        measure(MeasureConfig(world=SMALL, tasks=root / "tasks.jsonl", agent="oracle", trials=1), root / "run")
        _cache["small"] = root
    return _cache["small"]  # type: ignore[return-value]


@case(45, "class 3: tasks generate --out onto a named pipe (not a regular file)")
def _(tmp: Path) -> Outcome:
    import stat

    os.mkfifo(fifo := tmp / "pipe")  # as /dev/full or /dev/null: a write renamed over it would replace the node
    out = cli(["tasks", "generate", "--world", SMALL, "--n", "1", "--out", str(fifo)], "not a regular file")
    return out if stat.S_ISFIFO(os.stat(fifo).st_mode) else lost("the pipe was replaced by a file")


@case(45, "class 3: world explore --out onto its world's db.json")
def _(tmp: Path) -> Outcome:
    world = tmp / "w"
    cli(["world", "generate", "--out", str(world), "--users", "3", "--products", "3", "--orders", "3"], "")
    before = (world / "db.json").read_bytes()
    args = ["world", "explore", "--world", str(world), "--customers", "1", "--out", str(world / "db.json")]
    out = cli(args, "would overwrite a file of the --world input")
    return out if (world / "db.json").read_bytes() == before else lost("the world's db.json was overwritten")


@case(45, "class 4: tasks lint on a domain whose tasks.json is a folder")
def _(tmp: Path) -> Outcome:
    world = tmp / "w"
    cli(["world", "generate", "--out", str(world), "--users", "3", "--products", "3", "--orders", "3"], "")
    (world / "tasks.json").mkdir()
    return cli(["tasks", "lint", "--domain", str(world)], "is a folder, not a file")


@case(45, "class 4: gate --domain airline on runs measured in retail")
def _(tmp: Path) -> Outcome:
    root = _small_run(tmp)
    args = ["gate", "--candidate", str(root / "run"), "--tasks", str(root / "tasks.jsonl"), "--world", SMALL]
    return cli([*args, "--k", "1", "--domain", "airline", "--out", str(tmp / "g.json")], "given 'airline'")


@case(45, "class 1: report --world names another world than the runs'")
def _(tmp: Path) -> Outcome:
    root = _small_run(tmp)
    run, ts = str(root / "run"), str(root / "tasks.jsonl")
    args = ["report", "--baseline", run, "--candidate", run, "--tasks", ts, "--world", "gen-4-4x10x20"]
    return cli([*args, "--out", str(tmp / "r.html")], "but --world is 'gen-4-4x10x20'")


def _one_task_with_id(tmp: Path, task_id: str) -> Path:
    from pipeline.authoring.templates import generate_tasks
    from pipeline.world.registry import load_world

    line = json.loads(generate_tasks(load_world(SMALL), 1, seed=1)[0].model_dump_json())
    (path := tmp / "tasks.jsonl").write_text(json.dumps({**line, "id": task_id}) + "\n")
    return path


@case(45, "class 2: tasks validate: an empty task id")
def _(tmp: Path) -> Outcome:
    return cli(["tasks", "validate", str(_one_task_with_id(tmp, "")), "--world", SMALL], "cannot be empty")


@case(45, "class 2: tasks validate: a task id with NUL and a right-to-left override")
def _(tmp: Path) -> Outcome:
    path = _one_task_with_id(tmp, "a\u202eb\x00")
    return cli(["tasks", "validate", str(path), "--world", SMALL], "U+0000, U+202E")


def _resolved(tmp: Path, section: str, values: dict, fragment: str) -> Outcome:
    import yaml

    from pipeline.loop.params import ParamsError, load_params
    from pipeline.loop.resolve import resolve_params

    data = yaml.safe_load((ROOT / "params.yaml").read_text())
    data[section].update(values)
    (path := tmp / "params.yaml").write_text(yaml.safe_dump(data))
    here = os.getcwd()
    os.chdir(tmp)
    try:
        return raises(lambda: resolve_params(load_params(path), str(path)), (ParamsError,), fragment)
    finally:
        os.chdir(here)


@case(45, "class 7: params.yaml measure.tasks names a missing file")
def _(tmp: Path) -> Outcome:
    return _resolved(tmp, "measure", {"tasks": "data/no_such.jsonl"}, "measure.tasks: data/no_such.jsonl does not")


@case(45, "class 5: params.yaml world.eval_tasks 10**12")
def _(tmp: Path) -> Outcome:
    return _resolved(tmp, "world", {"eval_tasks": 10**12}, "less than or equal to 100000")


@case(45, "class 7: params.yaml target weight for a misspelt mode")
def _(tmp: Path) -> Outcome:
    return _resolved(tmp, "target", {"config": {"weights": {"invension": 1.0}}}, "unknown failure mode(s)")


@case(45, "class 7: params.yaml target dial misspelt")
def _(tmp: Path) -> Outcome:
    return _resolved(tmp, "target", {"config": {"dials": {"invention": {"vage_item": 0.5}}}}, "unknown dial(s)")


@case(45, "class 1: synthesize in the world its targets were measured in")
def _(tmp: Path) -> Outcome:
    root = _small_run(tmp)
    cli(["target", "--metrics", str(root / "run" / "metrics.json"), "--budget", "3", "--out", str(tmp / "t.json")], "")
    args = ["synthesize", "--world", SMALL, "--targets", str(tmp / "t.json"), "--out", str(tmp / "s")]
    return cli(args, "than the evaluation world")


@case(45, "class 5: world generate --users 10**9")
def _(tmp: Path) -> Outcome:
    return cli(["world", "generate", "--out", str(tmp / "w"), "--users", "1000000000"], "--users")


@case(45, "class 5: tasks generate --n 10**8")
def _(tmp: Path) -> Outcome:
    return cli(["tasks", "generate", "--world", SMALL, "--n", "100000000", "--out", str(tmp / "t.jsonl")], "--n")


@case(45, "class 7: world generate --seed -5 (a name no command reads back)")
def _(tmp: Path) -> Outcome:
    return cli(["world", "generate", "--out", str(tmp / "w"), "--seed", "-5"], "--seed")


def _refuel(amount: float) -> Outcome:
    from pipeline.world.registry import load_world
    from pipeline.world.tools import execute

    world = load_world(str(tau2("telecom")), "telecom")
    customer = next(iter(world.table("customers").values()))
    s = world.session(authenticated_user_id=customer.customer_id)
    args = {"customer_id": customer.customer_id, "line_id": customer.line_ids[0], "gb_amount": amount}
    event = execute(s, "refuel_data", args)
    if event.ok or any(s.changed().values()):
        return silent(f"refuel of {amount} GB ran: {event.content[:120]}")
    return clear(event.content)


@case(45, "class 6: telecom refuel_data of NaN GB")
def _(tmp: Path) -> Outcome:
    return _refuel(float("nan"))


@case(45, "class 6: telecom refuel_data of 1e300 GB (policy: at most 2)")
def _(tmp: Path) -> Outcome:
    return _refuel(1e300)


@case(45, "class 2: export tau2-submission with a blank model organization")
def _(tmp: Path) -> Outcome:
    args = ["export", "tau2-submission", "--run", str(_small_run(tmp) / "run"), "--out", str(tmp / "s.json")]
    return cli([*args, "--model-organization", " ", "--submitting-organization", "Lab"], "model_organization")


# ---- issue 58: a full disk while writing ----------------------------------------------------------------------------
def _full_disk(fn: Callable[[], Outcome]) -> Outcome:
    """`fn` run with the disk full: every fsync fails with ENOSPC, as a write that did not fit reports it."""
    import errno

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    fsync, os.fsync = os.fsync, no_space
    try:
        return fn()
    finally:
        os.fsync = fsync


def _stray(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if ".tmp" in p.name or ".partial-" in p.name)


@case(58, "class 3: export tau2-submission over an existing file on a full disk")
def _(tmp: Path) -> Outcome:
    args = ["export", "tau2-submission", "--run", str(_tau2_run("oracle")), "--out", str(out := tmp / "s.json")]
    args += ["--model-name", "m", "--model-organization", "Lab", "--submitting-organization", "Lab"]
    import logging

    from typer.testing import CliRunner

    from pipeline.cli import app

    handlers = list(logging.root.handlers)
    first = CliRunner().invoke(app, args)
    logging.root.handlers[:] = handlers  # as `cli`: the command's handler writes to the runner's stream
    if first.exit_code != 0:
        return silent(f"the first export failed: {first.output[:160]}")
    before = out.read_bytes()
    got = _full_disk(lambda: cli([*args, "--model-organization", "Other"], "No space left on device"))
    if out.read_bytes() != before:
        return lost(f"submission.json changed to {len(out.read_bytes())} bytes")
    return lost(f"left behind: {_stray(tmp)}") if _stray(tmp) else got


@case(58, "class 3: measure on a full disk (a fresh run folder, then a finished one)")
def _(tmp: Path) -> Outcome:
    import shutil

    small = _small_run(tmp)
    args = ["measure", "--world", SMALL, "--tasks", str(small / "tasks.jsonl"), "--trials", "1", "--out"]
    shutil.copytree(small / "run", done := tmp / "done")
    before = {p.name: p.read_bytes() for p in done.iterdir() if p.is_file()}
    finished = _full_disk(lambda: cli([*args, str(done)], "trajectories.jsonl could not be written"))
    if {p.name: p.read_bytes() for p in done.iterdir() if p.is_file()} != before:
        return lost("a finished run's files changed")
    if finished.status != "clear_error":
        return finished
    fresh = _full_disk(lambda: cli([*args, str(tmp / "fresh")], "journal.jsonl could not be written"))
    if stray := _stray(tmp):
        return lost(f"left behind: {stray}")
    return Outcome(fresh.status, f"{finished.detail[:100]} | {fresh.detail[:100]}")


# ---- issue 58: imports and exports checked for meaning -------------------------------------------------------------
def _tau2_run(agent: str) -> Path:
    """Two τ²-bench retail tasks and a run of `agent` on them in τ²-bench's retail world, made once per agent."""
    key = f"tau2_run:{agent}"
    if key not in _cache:
        from pipeline.dataset.io import write_tasks
        from pipeline.measure import MeasureConfig, measure
        from pipeline.tau2.importer import import_tau2

        root = Path(str(_cache["shared"])) / "tau2" / agent.replace(":", "_")
        write_tasks(root / "tasks.jsonl", import_tau2(tau2("retail"), "test").tasks[:2])
        measure(
            MeasureConfig(world=str(tau2("retail")), tasks=root / "tasks.jsonl", agent=agent, trials=1), root / "run"
        )
        _cache[key] = root / "run"
    return _cache[key]  # type: ignore[return-value]


def _export(run: Path, tmp: Path, fragment: str, *extra: str) -> Outcome:
    args = ["export", "tau2-submission", "--run", str(run), "--out", str(tmp / "s.json"), *extra]
    return cli([*args, "--model-organization", "Lab", "--submitting-organization", "Lab"], fragment)


def _imported(tmp: Path, name: str, domain: str) -> Path:
    from pipeline.tau2.import_run import import_run

    import_run(ROOT / "tests" / "data" / f"tau2_results_{domain}.json", tau2(domain), tmp / name)
    return tmp / name


@case(58, "class 3: export tau2-submission of a run in a generated world (gen-3) as τ²-bench retail")
def _(tmp: Path) -> Outcome:
    return _export(_small_run(tmp) / "run", tmp, "not τ²-bench's retail world", "--model-name", "m")


@case(58, "class 3: export tau2-submission of airline verdicts as retail")
def _(tmp: Path) -> Outcome:
    retail, airline = _imported(tmp, "retail", "retail"), _imported(tmp, "airline", "airline")
    (retail / "verdicts.jsonl").write_bytes((airline / "verdicts.jsonl").read_bytes())
    return _export(retail, tmp, "verdicts.jsonl: line 1: field verdict.")


@case(58, "class 3: export tau2-submission takes no model name from an agent label (flawed(invention=0.2…)")
def _(tmp: Path) -> Outcome:
    return _export(_tau2_run("flawed:invention=0.2"), tmp, "--model-name: the agent 'flawed(")


def _telecom_bad_assertion(tmp: Path) -> Path:
    import shutil

    shutil.copytree(tau2("telecom"), folder := tmp / "telecom")
    tasks = json.loads((folder / "tasks.json").read_text())
    tasks[0]["evaluation_criteria"]["env_assertions"][0]["arguments"]["no_such_arg"] = 1
    (folder / "tasks.json").write_text(json.dumps(tasks))
    return folder


@case(58, "class 3: tasks lint --strict of a telecom env assertion with an argument its function does not take")
def _(tmp: Path) -> Outcome:
    return cli(["tasks", "lint", "--domain", str(_telecom_bad_assertion(tmp)), "--strict"], "'no_such_arg' is not")


@case(58, "class 3: tasks import-tau2 of a telecom env assertion with an argument its function does not take")
def _(tmp: Path) -> Outcome:
    folder = _telecom_bad_assertion(tmp)
    return cli(["tasks", "import-tau2", "--domain", str(folder), "--out", str(tmp / "t.jsonl")], "'no_such_arg' is not")


@case(58, "class 3: grading a task whose env assertion its function cannot take (the task's error, not the agent's)")
def _(tmp: Path) -> Outcome:
    from pipeline.dataset import AssertionArgumentError, EnvAssertion
    from pipeline.grading import grade
    from pipeline.rollout import Trajectory
    from pipeline.tau2.importer import import_tau2

    imported = import_tau2(tau2("telecom"))
    task = imported.tasks[0]
    bad = EnvAssertion(env_type="user", func_name="assert_mobile_data_status", arguments={"no_such_arg": 1})
    task = task.model_copy(update={"evaluation": task.evaluation.model_copy(update={"env_assertions": [bad]})})
    w = imported.world
    empty = Trajectory(
        task_id=task.id, agent="oracle", user="u", world=w.name, domain="telecom", termination="user_stop"
    )
    return raises(lambda: grade(w, task, empty).passed, (AssertionArgumentError,), "'no_such_arg'")


@case(58, "class 3: import tau2-run of simulations without messages")
def _(tmp: Path) -> Outcome:
    data = json.loads((ROOT / "tests" / "data" / "tau2_results_retail.json").read_text())
    for sim in data["simulations"]:
        sim.pop("messages")
    (src := tmp / "r.json").write_text(json.dumps(data))
    args = ["import", "tau2-run", str(src), "--domain", str(tau2("retail")), "--out", str(tmp / "run")]
    return cli(args, "messages: no messages")


def _edited_db(tmp: Path, name: str, edit: Callable[[dict], None]) -> Path:
    import shutil

    shutil.copytree(tau2(name), folder := tmp / name)
    db = json.loads((folder / "db.json").read_text())
    edit(db)
    (folder / "db.json").write_text(json.dumps(db))
    return folder


@case(58, "class 3: tasks import-tau2 of an airline database with a reservation owned by nobody")
def _(tmp: Path) -> Outcome:
    def orphan(db: dict) -> None:
        next(iter(db["reservations"].values()))["user_id"] = "nobody_123"

    folder = _edited_db(tmp, "airline", orphan)
    return cli(["tasks", "import-tau2", "--domain", str(folder), "--out", str(tmp / "t.jsonl")], "owner 'nobody_123'")


@case(58, "class 3: tasks import-tau2 of a retail database with a negative price")
def _(tmp: Path) -> Outcome:
    def negative(db: dict) -> None:
        product = next(iter(db["products"].values()))
        product["variants"][next(iter(product["variants"]))]["price"] = -5.0

    folder = _edited_db(tmp, "retail", negative)
    return cli(["tasks", "import-tau2", "--domain", str(folder), "--out", str(tmp / "t.jsonl")], "negative price -5")


@case(58, "class 3: tasks generate --n 500 on a world that yields fewer tasks")
def _(tmp: Path) -> Outcome:
    args = ["tasks", "generate", "--world", str(tau2("telecom")), "--n", "500", "--out", str(tmp / "t.jsonl")]
    return cli(args, "yields only")


@case(58, "class 4: LoRA alpha 1e9 over rank 16")
def _(tmp: Path) -> Outcome:
    from pydantic import ValidationError

    from pipeline.train.lora import LoraSpec

    return raises(lambda: LoraSpec(rank=16, alpha=10**9), (ValidationError,), "alpha <= 64 * rank")


@case(58, "class 4: a trained weight moved 10**6 times its size")
def _(tmp: Path) -> Outcome:
    import torch
    from safetensors.torch import save_file

    from pipeline.train.update import AbsurdUpdateError, check_update

    model = torch.nn.Linear(4, 4)
    save_file({k: v.detach().clone() for k, v in model.state_dict().items()}, str(tmp / "model.safetensors"))
    with torch.no_grad():
        model.weight.mul_(1e6)
    return raises(lambda: check_update(model, tmp), (AbsurdUpdateError,), "training moved weight weight")


@case(58, "class 4: a chat template that loops for ever")
def _(tmp: Path) -> Outcome:
    from pipeline.formats import TemplateTimeoutError, probe_text

    loops = "{% for a in range(100000) %}{% for b in range(100000) %}{{ a }}{% endfor %}{% endfor %}"
    return raises(lambda: probe_text(loops, "loops.jinja", 2.0), (TemplateTimeoutError,), "within 2s")


@case(58, "class 5: --llm rewording that is a generic greeting")
def _(tmp: Path) -> Outcome:
    from pipeline.dataset import Request
    from pipeline.explore.llm import phrasing_problem

    req = Request(intent="cancel_order", utterance="Please cancel my pending order, it was a mistake.")
    why = phrasing_problem(req, "Hello! How can I help you today?")
    return clear(f"rejected: {why}") if why else silent("the greeting stands for the request")


@case(58, "class 5: --llm reply of JSON nested 100,000 deep")
def _(tmp: Path) -> Outcome:
    from pipeline.explore.llm import first_json

    got = first_json('{"tool": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return clear("read as no JSON (counted unparseable)") if got is None else silent(f"read as {str(got)[:80]}")


@case(58, "class 5: AGENTLOOP_TIMEOUT_S for the --llm endpoint")
def _(tmp: Path) -> Outcome:
    from pipeline.explore.llm import LLMRoles, LLMSpec

    old = os.environ.get("AGENTLOOP_TIMEOUT_S")
    os.environ["AGENTLOOP_TIMEOUT_S"] = "7"
    try:
        config = LLMRoles(LLMSpec.parse("openai:m@http://127.0.0.1:9/v1")).client.config
    finally:
        os.environ.pop("AGENTLOOP_TIMEOUT_S") if old is None else os.environ.update(AGENTLOOP_TIMEOUT_S=old)
    if config.timeout_s == 7.0 and config.deadline_s:
        return clear(f"timeout {config.timeout_s:g}s, deadline {config.deadline_s:g}s")
    return silent(f"timeout {config.timeout_s:g}s, deadline {config.deadline_s}")


@case(58, "class 7: train grpo --vllm colocate without vLLM")
def _(tmp: Path) -> Outcome:
    import importlib.util

    from pipeline.errors import InputError
    from pipeline.train.grpo import check_vllm

    if importlib.util.find_spec("vllm") is not None:
        raise Skip("vLLM is installed here")
    return raises(lambda: check_vllm("colocate", True), (InputError,), "vLLM is not installed")


for _who in ({"first_name": "", "last_name": "Doe", "dob": "1990-01-01"},
             {"first_name": "Ann", "last_name": "Doe", "dob": "yesterday"}):  # fmt: skip

    @case(58, f"class 7: airline passenger {_who}")
    def _(tmp: Path, who: dict = _who) -> Outcome:
        from pipeline.domains.airline.tools import TOOLS
        from pipeline.world import ToolError

        args = {"reservation_id": "ABC123", "passengers": [who]}
        return raises(lambda: TOOLS["update_reservation_passengers"].validate(args), (ToolError,), "Value error")


@case(58, "class 7: promote's tracking logged four times")
def _(tmp: Path) -> Outcome:
    from pipeline.tracking import IterationTracker, TrackingConfig

    config = TrackingConfig(tracking_uri=f"sqlite:///{tmp / 'mlruns.db'}")
    for _ in range(4):
        with IterationTracker(config, iteration=1, agent="oracle", params={"a": 1}, commit="c") as it:
            for name in ("measure", "gate"):
                with it.stage(name, params={"k": 1}):
                    pass
    client = config.client()
    runs = client.search_runs([client.get_experiment_by_name(config.experiment).experiment_id])
    stages = [r for r in runs if r.data.tags.get("agentloop.kind") == "stage"]
    return clear("each stage run listed once") if len(stages) == 2 else silent(f"{len(stages)} stage runs for 2")


_PLUGIN = """
import threading
from pydantic import BaseModel
from pipeline.world.domain import Domain
from pipeline.world.tables import Record, World
from pipeline.world.tools import ToolRegistry

class Member(Record):
    member_id: str
    visits: int = 0

TOOLS = ToolRegistry()

@TOOLS.register("read")
def sleeps(session) -> str:
    \"\"\"Never returns.\"\"\"
    threading.Event().wait()
    return ""

@TOOLS.register("read")
def huge(session) -> str:
    \"\"\"50 MB.\"\"\"
    return "x" * 50_000_000

@TOOLS.register("read")
def sneaky_read(session) -> str:
    \"\"\"A read that counts a visit.\"\"\"
    session.edit("members", "m1").visits += 1
    return "ok"

@TOOLS.register("transfer")
def transfer_to_human(session) -> str:
    \"\"\"Hand over.\"\"\"
    return "transferred"

class Gym(Domain):
    name = "NAME"
    tables = {"members": Member}
    tools = TOOLS

    def load(self, ref):
        return World({"members": {"m1": Member(member_id="m1")}}, "", ref, self) if ref == "gym" else None

    def policy(self):
        return ""

    def owner(self, table, record):
        return None

EXTRA
GYM = Gym()
"""


def _plugin(tmp: Path, module: str, extra: str = "", name: str = "gym") -> str:
    """A plug-in domain written to `tmp` and importable: its `module:attribute`."""
    (tmp / f"{module}.py").write_text(_PLUGIN.replace("EXTRA", extra).replace("NAME", name))
    if str(tmp) not in sys.path:
        sys.path.insert(0, str(tmp))
    return f"{module}:GYM"


@case(58, "class 2: a plug-in domain whose tools are a dict")
def _(tmp: Path) -> Outcome:
    spec = _plugin(tmp, "gym_tools_dict", "Gym.tools = {'sleeps': sleeps}")
    return cli(["tasks", "generate", "--world", "gym", "--domain", spec, "--n", "2", "--out", str(tmp / "t")], "tools")


@case(58, "class 2: a plug-in domain whose load returns a dict")
def _(tmp: Path) -> Outcome:
    spec = _plugin(tmp, "gym_load_dict", "Gym.load = lambda self, ref: {'members': {}}")
    return cli(["world", "explore", "--world", "gym", "--domain", spec, "--out", str(tmp / "m.json")], "load()")


@case(58, "class 2: a plug-in tool that never returns")
def _(tmp: Path) -> Outcome:
    from pipeline.world import ToolTimeoutError, execute, load_world

    os.environ["AGENTLOOP_TOOL_TIMEOUT_S"] = "2"
    try:
        world = load_world("gym", _plugin(tmp, "gym_sleeps"))
        return raises(lambda: execute(world.session(), "sleeps", {}), (ToolTimeoutError,), "did not return within 2 s")
    finally:
        del os.environ["AGENTLOOP_TOOL_TIMEOUT_S"]


@case(58, "class 2: a plug-in tool returning 50 MB")
def _(tmp: Path) -> Outcome:
    from pipeline.world import ToolResultError, execute, load_world

    session = load_world("gym", _plugin(tmp, "gym_huge")).session()
    got = raises(lambda: execute(session, "huge", {}), (ToolResultError,), "over the bound")
    return lost(f"{len(session.log)} events kept") if session.log else got


@case(58, "class 2: a plug-in read tool that edits a record after a transfer")
def _(tmp: Path) -> Outcome:
    from pipeline.world import ReadOnlyError, execute, load_world

    session = load_world("gym", _plugin(tmp, "gym_sneaky")).session()
    execute(session, "transfer_to_human", {})
    got = raises(lambda: execute(session, "sneaky_read", {}), (ReadOnlyError,), "declared 'read' but changed")
    return silent(f"kept: {session.changed()}") if any(session.changed().values()) else got


@case(58, "class 2: a plug-in domain named retail, exported and sent to a worker")
def _(tmp: Path) -> Outcome:
    import pickle

    from pipeline.world import domain_spec, resolve_domain

    spec = _plugin(tmp, "gym_named_retail", name="retail")
    domain = resolve_domain(spec)
    if pickle.loads(pickle.dumps(domain)) is not domain:
        return silent("a worker would resolve another domain")
    if domain_spec(domain) != spec:
        return silent(f"recorded as {domain_spec(domain)!r}")
    return clear(f"recorded and sent as {spec!r}")


# ---- the harness --------------------------------------------------------------------------------------------------
def run_case(c: Case, timeout: float) -> tuple[Outcome, float]:
    box: dict[str, Outcome] = {}

    def target() -> None:
        with tempfile.TemporaryDirectory() as d:
            try:
                box["out"] = c.run(Path(d))
            except Skip as exc:
                box["out"] = Outcome("skipped", str(exc))
            except Exception as exc:  # noqa: BLE001 - a crash is what this bench counts
                last = traceback.format_exception_only(type(exc), exc)[-1].strip()
                box["out"] = Outcome("crash", last[:300])
            out = box["out"]
            for where, name in ((d, "<tmp>"), (str(_cache["shared"]), "<shared>"), (str(ROOT), "<repo>")):
                out.detail = out.detail.replace(where, name)

    t0 = time.perf_counter()
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    seconds = round(time.perf_counter() - t0, 3)
    return (box.get("out") or Outcome("hang", f"still running after {timeout} s")), seconds


def by_class(rows: list[dict]) -> dict[str, dict[str, int]]:
    """Outcome counts per failure class of issue 45 (a case named "class N: ..."; others under "other")."""
    table: dict[str, Counter] = {}
    for r in rows:
        head, sep, _ = r["case"].partition(":")
        key = head if sep and head.startswith("class ") else "other"
        table.setdefault(key, Counter())[r["status"]] += 1
    return {k: {s: v[s] for s in STATUSES if v[s]} for k, v in sorted(table.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=60.0, help="Seconds a case may take before it is a hang.")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "bad_inputs.json")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as shared:
        _cache["shared"] = shared
        rows = []
        for c in CASES:
            out, seconds = run_case(c, args.timeout)
            rows.append(
                {"item": c.item, "case": c.name, "status": out.status, "detail": out.detail, "seconds": seconds}
            )
            print(f"[{out.status:>12}] item {c.item}: {c.name}: {out.detail}", flush=True)
    counts = Counter(r["status"] for r in rows)
    summary = {"cases_tried": sum(counts[s] for s in STATUSES if s != "skipped"), **{s: counts[s] for s in STATUSES}}
    report = {
        "summary": summary,
        "by_class": by_class(rows),
        "cases": rows,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.machine()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(
        f"cases tried {summary['cases_tried']}: clear errors {summary['clear_error']}, crashes {summary['crash']},"
        f" silent wrong results {summary['silent_wrong']}, hangs {summary['hang']}, data lost {summary['data_lost']}"
        f" (skipped {summary['skipped']}) → {args.out}"
    )
    os._exit(0 if summary["crash"] + summary["silent_wrong"] + summary["hang"] + summary["data_lost"] == 0 else 1)


if __name__ == "__main__":
    main()
