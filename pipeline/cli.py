"""`agentloop`: one subcommand per job of the loop."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pipeline.loop.progress import track

app = typer.Typer(help="agentloop: measure, target, synthesize, curate, train, gate.", no_args_is_help=True)
world_app = typer.Typer(help="Worlds: generate, replay τ²-bench domains.", no_args_is_help=True)
tasks_app = typer.Typer(help="Task files: generate, validate.", no_args_is_help=True)
app.add_typer(world_app, name="world")
app.add_typer(tasks_app, name="tasks")
from pipeline.tau2.cli import import_tau2_cmd  # noqa: E402

tasks_app.command("import-tau2")(import_tau2_cmd)
from pipeline.tau2.cli import lint_cmd  # noqa: E402

tasks_app.command("lint")(lint_cmd)
from pipeline.train.cli import train_app  # noqa: E402  (light: heavy imports happen inside the commands)

app.add_typer(train_app, name="train")
from pipeline.gate_aa_cli import gate_aa_cmd  # noqa: E402  (outside pipeline.gate: its package import is heavy)

app.command("gate-aa")(gate_aa_cmd)
from pipeline.tau2.cli import import_app  # noqa: E402

app.add_typer(import_app, name="import")
from pipeline.tau2.cli import export_app  # noqa: E402

app.add_typer(export_app, name="export")
from pipeline.agents.model_cli import model_app  # noqa: E402

app.add_typer(model_app, name="model")
console = Console(stderr=True)


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
    raise typer.Exit(2)


def _check_out(out: Path, option: str = "--out", **kwargs) -> None:
    """Refuse, before any work, an output that is an input or cannot be written (`pipeline.outputs`)."""
    from pipeline.outputs import OutputError, check_output

    try:
        check_output(out, option, **kwargs)
    except OutputError as exc:
        _fail(str(exc))


@app.callback()
def main(verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging.")) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("agentloop.progress").setLevel(logging.INFO)  # off a terminal, progress is log lines


@world_app.command("replay")
def world_replay(
    domain: Path = typer.Option(..., help="τ²-bench domain directory (db.json, tasks.json, policy.md)."),
    out: Path = typer.Option(..., help="Output JSON Lines file, one line per task."),
    kind: str = typer.Option(
        None, "--kind", help="Domain name or module:attribute (default: the domain whose tables db.json holds)."
    ),
) -> None:
    """Replay every task's gold actions on a fresh copy of the database; write each end state."""
    from pipeline.world.domain import DomainCapabilityError
    from pipeline.world.replay import write_replay
    from pipeline.world.tables import WorldLoadError

    _check_out(out, inputs={"--domain": domain})
    try:
        lines = write_replay(domain, out, kind)
    except (WorldLoadError, DomainCapabilityError, ValueError, FileNotFoundError) as exc:
        _fail(str(exc))
    failed = sum(1 for line in lines if line["failed_actions"])
    console.print(f"replayed {len(lines)} tasks → {out} ({failed} with refused gold calls)")


@world_app.command("generate")
def world_generate(
    out: Path = typer.Option(..., help="Output domain directory (db.json + policy.md)."),
    seed: int = typer.Option(0, help="Generator seed: same seed, same world."),
    products: int = typer.Option(None, min=1, help="Retail: products (default 50)."),
    users: int = typer.Option(None, min=1, help="Users (default: retail 500, airline 500)."),
    orders: int = typer.Option(None, min=1, help="Retail: orders (default 1000)."),
    flights: int = typer.Option(None, min=2, help="Airline: flights (default 300)."),
    reservations: int = typer.Option(None, min=0, help="Airline: reservations (default 2000)."),
    domain: str = typer.Option(
        "retail", help="Domain whose generator makes the world (retail, airline, or module:attribute)."
    ),
) -> None:
    """Generate a fresh seeded world with a domain's generator (retail's: products, users, orders; airline's:
    flights, users, reservations). Sizes not given take the generator's defaults."""
    from pipeline.world.domain import DomainCapabilityError
    from pipeline.world.registry import UnknownDomainError, resolve_domain
    from pipeline.world.tables import WorldLoadError

    _check_out(out, folder=True, owned=("db.json", "policy.md"))
    given = dict(n_products=products, n_users=users, n_orders=orders, n_flights=flights, n_reservations=reservations)
    try:
        d = resolve_domain(domain)
        generate = d.require("generator", "world generate")
        world = generate(seed, {k: v for k, v in given.items() if v is not None})
    except (UnknownDomainError, DomainCapabilityError, WorldLoadError) as exc:
        _fail(str(exc))
    out.mkdir(parents=True, exist_ok=True)
    data = world.to_dict()
    (out / "db.json").write_text(json.dumps(data, indent=1))
    (out / "policy.md").write_text(d.policy())
    console.print(f"world {world.name}: {', '.join(f'{len(v)} {k}' for k, v in data.items())} → {out}")


@world_app.command("explore")
def world_explore(
    world: str = typer.Option(..., help="World reference: a domain directory, a db.json, or a name the domain reads."),
    out: Path = typer.Option(..., help="Output world model (JSON)."),
    seed: int = typer.Option(0, help="Exploration seed: same world and seed, same model."),
    customers: int = typer.Option(24, min=1, help="Customers each write tool is called as."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from the world)."),
) -> None:
    """Learn a world model by running the world's write tools as its customers: which records each names, what it
    changes, and when it refuses and why (refusals grouped into preconditions on record fields)."""
    from pipeline.explore.probe import explore
    from pipeline.world.registry import UnknownDomainError, load_world
    from pipeline.world.tables import WorldLoadError

    try:
        loaded = load_world(world, domain)
    except (UnknownDomainError, WorldLoadError) as exc:
        _fail(str(exc))
    model = explore(loaded, seed=seed, customers=customers)
    model.write(out)
    for name, w in model.writes.items():
        why = sum(r.precondition is not None for r in w.refusals)
        console.print(f"{name}: {w.ok}/{w.calls} calls succeeded; {len(w.refusals)} refusal group(s), {why} explained")
    for name, why in model.unexplored.items():
        console.print(f"[yellow]{name}: unexplored ({why})[/yellow]")
    console.print(f"world model of {loaded.name} → {out}")


@tasks_app.command("generate")
def tasks_generate(
    world: str = typer.Option(..., help="World reference: gen-<seed>[-PxUxO] or a domain directory."),
    n: int = typer.Option(100, min=1, help="Number of tasks."),
    seed: int = typer.Option(0),
    out: Path = typer.Option(..., help="Output tasks.jsonl."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from the world)."),
    llm: str = typer.Option(
        None, help="openai:MODEL@URL: a language model rewords requests and proposes evolutions (kept if verified)."
    ),
    llm_proposals: int = typer.Option(0, min=0, help="Evolutions the --llm model proposes (kept only if verified)."),
) -> None:
    """Generate verified tasks (gold end state reachable) grounded in a world, with its domain's task generator."""
    from pipeline.dataset.io import write_tasks
    from pipeline.world.domain import DomainCapabilityError
    from pipeline.world.registry import load_world

    _check_out(out, inputs={"--world": world})
    if llm_proposals and not llm:
        _fail("--llm-proposals needs --llm openai:MODEL@URL (the model that proposes them)")
    loaded = load_world(world, domain)
    try:
        generate_tasks = loaded.domain.require("tasks", needed_for="agentloop tasks generate")
    except DomainCapabilityError as exc:
        _fail(str(exc))
    tasks = generate_tasks(loaded, n, seed=seed)
    if llm:
        from pipeline.explore.llm import LLMRoles, LLMSpec, LLMSpecError, with_llm
        from pipeline.rollout.protocols import InfrastructureError

        try:
            roles = LLMRoles(LLMSpec.parse(llm), seed=seed)
            tasks = with_llm(loaded, tasks, roles, llm_proposals, seed=seed)
        except (LLMSpecError, InfrastructureError) as exc:
            _fail(str(exc))
        report = out.with_name(out.name.removesuffix(".jsonl") + ".llm.json")
        report.write_text(json.dumps(roles.report.to_dict(), indent=2) + "\n", encoding="utf-8")
        r = roles.report
        rejected, dropped = sum(r.phrasing_rejected.values()), dict(r.dropped)
        console.print(f"--llm: {r.phrased} requests rephrased ({rejected} rejected); "
                      f"{r.verified}/{r.proposed} proposals verified, dropped {dropped} → {report}")  # fmt: skip
    write_tasks(out, tasks)
    console.print(f"{len(tasks)} tasks → {out}")


@tasks_app.command("validate")
def tasks_validate(
    path: Path = typer.Argument(..., help="A tasks.jsonl file."),
    world: str = typer.Option(None, help="World reference to check against (default: the world the tasks name)."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from the world)."),
) -> None:
    """Check a task file against the schema and the world it runs in; errors name the line or task and the field."""
    from pipeline.dataset.validate import validate_file

    try:
        console.print(escape(validate_file(path, world, domain)), soft_wrap=True)
    except (ValueError, LookupError) as exc:
        _fail(str(exc))


@app.command("rollout")
def rollout(
    world: str = typer.Option(..., help="World reference: gen-<seed>[-PxUxO] or a domain directory."),
    tasks: Path = typer.Option(..., help="tasks.jsonl"),
    agent: str = typer.Option("oracle", help="Scripted agent: oracle or flawed."),
    flaw_rate: float = typer.Option(0.3, min=0.0, max=1.0, help="For --agent flawed: rate of each planted mode."),
    trials: int = typer.Option(1, min=1),
    seed: int = typer.Option(0),
    out: Path = typer.Option(..., help="Output trajectories .jsonl; verdicts go to <name>.verdicts.jsonl beside it."),
) -> None:
    """Run scripted episodes (agent ↔ scripted user ↔ tools), grade each, and write trajectories + verdicts."""
    from pipeline.dataset.io import TaskFileError, read_tasks
    from pipeline.dataset.validate import check_tasks
    from pipeline.grading.grader import grade
    from pipeline.rollout.runner import run_episode
    from pipeline.users.scripted import ScriptedUser
    from pipeline.world.registry import load_world

    verdict_path = out.with_suffix(".verdicts.jsonl")
    for path in (out, verdict_path):
        _check_out(path, inputs={"--tasks": tasks, "--world": world})
    if out.resolve() == verdict_path.resolve():
        _fail(f"--out {out}: the verdicts file would be the trajectories file; give a .jsonl name")
    try:
        task_list = read_tasks(tasks)
    except TaskFileError as exc:
        _fail(str(exc))
    if not task_list:
        _fail(f"{tasks}: no tasks")
    the_agent = _scripted_agent(agent, flaw_rate, seed)
    w = load_world(world)
    try:
        check_tasks(w, task_list, str(tasks))  # as measure: tasks of another world would be graded for nothing
    except TaskFileError as exc:
        _fail(str(exc))
    user = ScriptedUser()
    out.parent.mkdir(parents=True, exist_ok=True)
    passed = total = 0
    progress_bar = track("episodes", len(task_list) * trials, "episodes", console=console)
    with out.open("w") as ft, verdict_path.open("w") as fv, progress_bar as progress:
        for task in task_list:
            for trial in range(trials):
                traj = run_episode(w, task, the_agent, user, trial=trial, seed=seed)
                verdict = grade(w, task, traj)
                ft.write(traj.model_dump_json() + "\n")
                fv.write(verdict.model_dump_json() + "\n")
                total += 1
                passed += verdict.passed
                progress.advance(verdict.passed)
    table = Table(title=escape(f"rollout: {agent} on {tasks.name}"))
    table.add_column("episodes", justify="right")
    table.add_column("passed", justify="right")
    table.add_column("pass rate", justify="right")
    table.add_row(str(total), str(passed), f"{passed / total:.1%}")
    Console().print(table)


@app.command("measure")
def measure_cmd(
    world: str = typer.Option(..., help="World reference: gen-<seed>[-PxUxO] or a domain directory."),
    tasks: Path = typer.Option(..., help="Held-out tasks.jsonl."),
    agent: str = typer.Option(
        "oracle", help="Agent spec: oracle, flawed[:mode=rate,...,seed=N], hf:PATH, openai:MODEL, vllm:PATH."
    ),
    trials: int = typer.Option(4, min=1, help="Trials per task."),
    k: int = typer.Option(None, min=1, help="Largest k for pass@k / pass^k (default: --trials)."),
    seed: int = typer.Option(0),
    out: Path = typer.Option(
        ..., help="Run directory for trajectories.jsonl, verdicts.jsonl, per_task.csv, metrics.json."
    ),
    max_tasks: int = typer.Option(None, min=1, help="Only the first N tasks."),
    user: str = typer.Option(
        "scripted",
        help="User simulator: scripted, llm:MODEL[,temperature=T], or tau2-llm:MODEL[@BASE_URL][,temperature=T]"
        " (τ²-bench's conventions: the task's scenario as written, ###STOP### / ###TRANSFER### / ###OUT-OF-SCOPE###).",
    ),
    judge: str = typer.Option(
        None, help="Optional judge (soft rubric items; reviews the user simulator on failed trials): llm:MODEL."
    ),
    executor: str = typer.Option("serial", help="serial, or ray (tasks × trials fanned out to Ray workers)."),
    address: str = typer.Option(
        None,
        help="With --executor ray: an existing cluster to connect to, HOST:PORT, ray://HOST:PORT or auto"
        " (default: $RAY_ADDRESS, else a local Ray instance).",
    ),
    workers: int = typer.Option(
        None, min=1, help="With --executor ray: worker actors (default: one per CPU of the cluster, all nodes)."
    ),
    concurrency: int = typer.Option(16, min=1, help="Episodes in flight per worker (same verdicts)."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: found from --world)."),
) -> None:
    """Measure an agent: k seeded trials per task, graded from the world state, failures diagnosed.

    Every finished trial is journaled in --out; run the same command again after a crash to resume."""
    from pydantic import ValidationError

    from pipeline.agents.registry import UnknownAgentError
    from pipeline.dataset.io import TaskFileError, read_tasks
    from pipeline.endpoint.errors import UnsupportedSettingError
    from pipeline.grading.llm_judge import UnknownJudgeError
    from pipeline.measure import MeasureConfig, measure
    from pipeline.measure.run import RUN_FILES
    from pipeline.metrics.errors import MetricsInputError
    from pipeline.outputs import FolderBusyError
    from pipeline.rollout.resume import ResumeMismatchError
    from pipeline.users.registry import UnknownUserError
    from pipeline.world.domain import DomainCapabilityError
    from pipeline.world.registry import UnknownDomainError
    from pipeline.world.tables import WorldLoadError

    if executor != "ray" and (address or workers):
        _fail("--address and --workers need --executor ray")
    _check_out(out, folder=True, inputs={"--tasks": tasks, "--world": world}, owned=RUN_FILES)
    try:
        config = MeasureConfig(
            world=world,
            domain=domain,
            tasks=tasks,
            agent=agent,
            trials=trials,
            k=k,
            seed=seed,
            max_tasks=max_tasks,
            user=user,
            judge=judge,
            executor=executor,
            address=address,
            workers=workers,
            concurrency=concurrency,
        )
    except ValidationError as exc:
        _fail(f"{'.'.join(map(str, exc.errors()[0]['loc']))}: {exc.errors()[0]['msg']}")
    try:
        n_tasks = len(read_tasks(tasks))
        if max_tasks:
            n_tasks = min(n_tasks, max_tasks)
        with track(f"measure {agent}", n_tasks * trials, "trials", console=console) as progress:
            summary = measure(config, out, on_trial=lambda record: progress.advance(record.passed))
    except (
        TaskFileError,
        UnknownAgentError,
        UnknownUserError,
        UnknownJudgeError,
        MetricsInputError,
        WorldLoadError,
        ResumeMismatchError,
        ImportError,
        ConnectionError,
        TimeoutError,
        DomainCapabilityError,
        UnknownDomainError,
        UnsupportedSettingError,
        FolderBusyError,
    ) as exc:
        _fail(str(exc))
    Console().print(_summary_table(summary))
    console.print(escape(f"wrote {out}/metrics.json, per_task.csv, trajectories.jsonl, verdicts.jsonl"))


@app.command("serve")
def serve_cmd(
    model: Path = typer.Option(..., help="Checkpoint directory: an agentloop checkpoint or any transformers model."),
    name: str = typer.Option(None, help="Model name clients must send (default: the directory's name)."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, min=1, max=65535),
    max_concurrency: int = typer.Option(1, min=1, help="Generations run at once (more queue)."),
    max_tokens: int = typer.Option(256, min=1, help="Reply length when a request sets none."),
    threads: int = typer.Option(1, min=0, help="Torch threads per generation (0: torch's default)."),
    api_key: str = typer.Option(
        None, envvar="AGENTLOOP_SERVE_API_KEY", help="Demand `Authorization: Bearer KEY` (default: no key)."
    ),
    max_request_bytes: int = typer.Option(1_000_000, min=1, help="Largest request body; more is refused (413)."),
    device: str = typer.Option(None, help="cpu, cuda, cuda:N, or auto (device_map over the GPUs)."),
    dtype: str = typer.Option("auto", help="auto (the checkpoint's own), float32, bfloat16 or float16."),
    chat_format: str = typer.Option(None, "--format", help="Chat format (default: recorded, or from the template)."),
) -> None:
    """Serve a local model over an OpenAI-compatible chat-completions API with tool calls."""
    from pipeline.agents.formats.codec import CodecMismatchError
    from pipeline.serve import load_engine, serve

    if api_key is not None and not api_key.strip():
        _fail("--api-key (or AGENTLOOP_SERVE_API_KEY) is empty: give a key, or leave it unset to serve without one")
    try:
        engine = load_engine(model, name, device=device, dtype=dtype, chat_format=chat_format)
    except (FileNotFoundError, OSError, CodecMismatchError, ValueError) as exc:
        _fail(str(exc))
    console.print(f"serving {engine.name} on http://{host}:{port}/v1 (context {engine.context} tokens)")
    serve(
        engine,
        host=host,
        port=port,
        max_concurrency=max_concurrency,
        default_max_tokens=max_tokens,
        threads=threads or None,
        api_key=api_key,
        max_request_bytes=max_request_bytes,
    )


@app.command("report")
def report_cmd(
    baseline: Path = typer.Option(..., help="Baseline measure run directory."),
    candidate: Path = typer.Option(..., help="Candidate measure run directory."),
    tasks: Path = typer.Option(..., help="The tasks.jsonl both runs were measured on."),
    world: str = typer.Option(..., help="World reference the runs used (shown in the report)."),
    gate: Path = typer.Option(None, help="gate.json with the promotion decision, if any."),
    extra: list[Path] = typer.Option(None, help="More measure run directories for the cost / pass^k frontier."),
    out: Path = typer.Option(Path("report.html"), help="Output HTML file; plots go to plots/ beside it."),
    verdict: str = typer.Option("strict", help="Which verdict counts a pass: strict or tau2."),
) -> None:
    """Write one self-contained HTML report: pass^k, failure modes, cost frontier, gate, flipped trajectories."""
    from pipeline.dataset.io import TaskFileError
    from pipeline.grading.tau2_reward import VERDICTS

    if verdict not in VERDICTS:
        _fail(f"--verdict {verdict!r}: expected {' or '.join(VERDICTS)}")
    from pipeline.metrics.errors import MetricsInputError
    from pipeline.report import ReportInputError, build_report

    given = {"--baseline": baseline, "--candidate": candidate, "--tasks": tasks, "--gate": gate, "--extra": extra}
    _check_out(out, inputs=given)
    try:
        path = build_report(
            baseline, candidate, tasks, world, gate_json=gate, out=out, extra_agents=extra or None, verdict=verdict
        )
    except (ReportInputError, TaskFileError, MetricsInputError) as exc:
        _fail(str(exc))
    console.print(f"report → {path} (plots in {path.parent / 'plots'})")


@app.command("gate")
def gate_cmd(
    candidate: Path = typer.Option(..., help="Candidate measure run directory (its trajectories.jsonl is re-graded)."),
    champion: Path = typer.Option(
        None,
        help="Champion measure run directory; omit on the first iteration (then: promote iff the candidate's "
        "pass^k lower bound exceeds the margin).",
    ),
    tasks: Path = typer.Option(..., help="The frozen held-out tasks.jsonl both runs were measured on."),
    world: str = typer.Option(..., help="World reference the runs used: gen-<seed>[-PxUxO] or a domain directory."),
    k: int = typer.Option(4, min=1, help="The k of pass^k."),
    margin: float = typer.Option(0.0, help="Promote only if the pass^k gain's lower bound exceeds this."),
    confidence: float = typer.Option(0.95, help="Level of the paired bootstrap interval."),
    resamples: int = typer.Option(2000, help="Bootstrap resamples and sign-flip permutations."),
    seed: int = typer.Option(0),
    alpha: float = typer.Option(0.05, help="Family-wise level of the Holm-corrected 'got worse' tests."),
    power: float = typer.Option(0.8, help="Power the minimum detectable effect (MDE) is stated at."),
    min_effect: float = typer.Option(
        0.10, help="Gain beyond the margin the gate must be able to see, else inconclusive."
    ),
    out: Path = typer.Option(Path("gate.json"), help="Where to write the decision."),
    check: bool = typer.Option(
        False, "--check", help="Exit 0 when promoted, 1 when blocked, 3 when inconclusive (for CI)."
    ),
    verdict: str = typer.Option("strict", help="Which verdict counts a pass: strict or tau2 (τ²-bench's reward)."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from --world)."),
) -> None:
    """Promote or block: paired bootstrap of the pass^k gain over held-out tasks, Holm tests for regressions."""
    from pydantic import ValidationError

    from pipeline.gate import GateConfig, GateInputError, decide, write_gate
    from pipeline.gate.render import OUTCOME_WORD, decision_table
    from pipeline.metrics.errors import MetricsInputError
    from pipeline.world.registry import load_world
    from pipeline.world.tables import WorldLoadError

    _check_out(out, inputs={"--candidate": candidate, "--champion": champion, "--tasks": tasks, "--world": world})
    try:
        config = GateConfig(
            k=k,
            margin=margin,
            confidence=confidence,
            resamples=resamples,
            seed=seed,
            alpha=alpha,
            power=power,
            min_effect=min_effect,
            verdict=verdict,
        )
        decision = decide(candidate, champion, tasks, load_world(world, domain), config)
    except ValidationError as exc:
        _fail("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))
    except (GateInputError, MetricsInputError, WorldLoadError) as exc:
        _fail(str(exc))
    write_gate(decision, out)
    Console().print(decision_table(decision))
    console.print(f"gate: {OUTCOME_WORD[decision.outcome]} → {out}")
    if check and not decision.promote:
        raise typer.Exit(3 if decision.outcome == "inconclusive" else 1)


@app.command("target")
def target_cmd(
    metrics: Path = typer.Option(..., help="A measure run's metrics.json."),
    budget: int = typer.Option(..., min=0, help="Tasks to synthesize in all."),
    out: Path = typer.Option(..., help="Output targets.json."),
    config: Path = typer.Option(None, help="TargetConfig as JSON or YAML (weights, floor, rate, dials)."),
    verdicts: Path = typer.Option(None, help="The measure run's verdicts.jsonl: also record where each mode failed."),
    tasks: Path = typer.Option(None, help="The measured tasks.jsonl (with --verdicts)."),
    domain: str = typer.Option(
        None, help="The tasks' domain: retail, airline or module:attribute (default: the run's trajectories')."
    ),
) -> None:
    """Split a synthesis budget across failure modes (rate × weight, floor per mode), with difficulty dials;
    with --verdicts and --tasks, also the cells (template × dial × outcome) each mode failed in."""
    from pydantic import ValidationError

    from pipeline.target import MetricsReadError, TargetConfig, make_targets

    _check_out(out, inputs={"--metrics": metrics, "--config": config, "--verdicts": verdicts, "--tasks": tasks})
    try:
        cfg = TargetConfig.model_validate(_load_mapping(config)) if config else TargetConfig()
        targets = make_targets(metrics, budget, cfg, verdicts, tasks, domain=domain)
    except (MetricsReadError, ValidationError, ValueError, LookupError, OSError) as exc:
        _fail(str(exc))
    targets.write(out)
    table = Table(title=f"targets: {budget} tasks from {metrics}")
    for col in ("mode", "rate", "weight", "count", "dials"):
        table.add_column(col)
    for mode, t in targets.modes.items():
        dials = ", ".join(f"{d}={p:.2f}" for d, p in t.dials.items())
        cells = targets.cells.get(mode, {})
        top = ", ".join(f"{c} {w:.0%}" for c, w in list(cells.items())[:3])
        table.add_row(mode, f"{t.rate:.3f}", f"{t.weight:g}", str(t.count), dials + (f"; cells: {top}" if top else ""))
    Console().print(table)
    console.print(f"wrote {out}")


@app.command("synthesize")
def synthesize_cmd(
    world: str = typer.Option(..., help="A generated world: gen-<seed>[-PxUxO] (never the evaluation world)."),
    targets: Path = typer.Option(..., help="targets.json from `agentloop target`."),
    out: Path = typer.Option(..., help="Output directory: tasks.jsonl, trajectories.jsonl, manifest.json."),
    seed: int = typer.Option(0),
    generations: int = typer.Option(8, min=0, help="Generations of descendants after the atomic one."),
    config: Path = typer.Option(None, help="SynthConfig as JSON or YAML (overrides --seed/--generations)."),
    judge_url: str = typer.Option(None, help="OpenAI-compatible base URL for the optional judge cascade."),
    judge_model: str = typer.Option(None, help="Model name for the judge cascade."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from the world)."),
) -> None:
    """Targeted, evolved, verified tasks grounded in a generated world, with the oracle's gold trajectories."""
    from pydantic import ValidationError

    from pipeline.synth.synthesize import EvalWorldError, SynthConfig, synthesize
    from pipeline.target import Targets
    from pipeline.world.registry import load_world
    from pipeline.world.tables import WorldLoadError

    _check_out(
        out,
        folder=True,
        inputs={"--world": world, "--targets": targets, "--config": config},
        owned=("tasks.jsonl", "trajectories.jsonl", "manifest.json"),
    )
    try:
        data = _load_mapping(config) if config else {"seed": seed, "max_generations": generations}
        if judge_url:
            data["judge"] = {"base_url": judge_url, "model": judge_model or "judge"}
        cfg = SynthConfig.model_validate(data)
        the_targets = Targets.read(targets)
        w = load_world(world, domain)
        total = sum(t.count for t in the_targets.modes.values())
        with track("synthesize", total, "tasks", console=console) as progress:
            result = synthesize(w, the_targets, out, cfg, on_task=lambda _: progress.advance())
    except (EvalWorldError, WorldLoadError, ValidationError, ValueError, LookupError, OSError) as exc:
        _fail(str(exc))
    m = result.manifest
    table = Table(title=f"synthesized {m['tasks']} tasks in {w.name} ({m['generations']} generations)")
    table.add_column("mode")
    table.add_column("target", justify="right")
    table.add_column("made", justify="right")
    for mode, n in m["targets"].items():
        table.add_row(mode, str(n), str(m["counts"]["by_mode"].get(mode, 0)))
    Console().print(table)
    cov, rw = m["coverage"], m["rework"]["totals"]
    console.print(
        f"coverage {cov['covered']}/{cov['cells']} cells; first try {rw['first_try']}, reworked "
        f"{rw['reworked']}, dropped {rw['dropped']}; wrote {out}/tasks.jsonl, trajectories.jsonl, "
        "manifest.json"
    )


@app.command("curate")
def curate_cmd(
    pool: list[Path] = typer.Option(..., help="Trajectory file or run directory; repeat for more."),
    tasks: Path = typer.Option(..., help="tasks.jsonl with every pooled trajectory's task."),
    world: str = typer.Option(..., help="World reference the pool ran in."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from the world)."),
    agent: str = typer.Option(..., help="Current agent spec to probe (oracle, flawed:..., hf:PATH, ...)."),
    probes: int = typer.Option(8, min=1, help="Probe episodes per task."),
    out: Path = typer.Option(..., help="Output directory: selected.jsonl, manifest.json."),
    anchor_ratio: float = typer.Option(0.3, min=0.0, max=1.0, help="Share of anchors (tasks the agent passes)."),
    edges: str = typer.Option("0,0.08,0.40,0.70,0.90,1", help="Band edges, comma-separated."),
    max_items: int = typer.Option(None, min=1, help="Cap on selected tasks."),
    seed: int = typer.Option(0),
    executor: str = typer.Option("serial", help="Where probes run: serial, or ray (as measure's --executor)."),
    address: str = typer.Option(None, help="With --executor ray: a Ray cluster's address (as measure's)."),
    workers: int = typer.Option(None, min=1, help="With --executor ray: worker actors (as measure's)."),
    concurrency: int = typer.Option(16, min=1, help="Probes in flight per worker (same verdicts)."),
) -> None:
    """Replay-verify a pool, band its tasks by probing the agent (Jeffreys posterior), mix anchors and targets."""
    from pydantic import ValidationError

    from pipeline.agents.registry import UnknownAgentError
    from pipeline.curate import Bands, CurateConfig, curate
    from pipeline.dataset.io import TaskFileError
    from pipeline.world.tables import WorldLoadError

    if executor != "ray" and (address or workers):
        _fail("--address and --workers need --executor ray")
    _check_out(
        out,
        folder=True,
        inputs={"--pool": pool, "--tasks": tasks, "--world": world},
        owned=("selected.jsonl", "manifest.json"),
    )
    try:
        bands = Bands(edges=[float(x) for x in edges.split(",")])
        cfg = CurateConfig(
            pool=pool,
            tasks=tasks,
            world=world,
            domain=domain,
            agent=agent,
            probes=probes,
            seed=seed,
            bands=bands,
            anchor_ratio=anchor_ratio,
            max_items=max_items,
            executor=executor,
            address=address,
            workers=workers,
            concurrency=concurrency,
        )
        with track(f"probe {agent}", None, "probes", console=console) as progress:
            m = curate(cfg, out, on_probe=lambda r: progress.advance(r.verdict.passed), on_total=progress.set_total)
    except (TaskFileError, UnknownAgentError, WorldLoadError, ValidationError, ValueError, OSError) as exc:
        _fail(str(exc))  # OSError covers ConnectionError and TimeoutError (Ray: no cluster, workers unplaced)
    except ImportError as exc:
        _fail(str(exc))
    table = Table(title=f"curated {m['selected']} of {m['pool']['trajectories']} pooled trajectories")
    table.add_column("band")
    table.add_column("tasks", justify="right")
    for band, n in m["band_histogram"].items():
        table.add_row(band, str(n))
    Console().print(table)
    r = m["ratio"]
    console.print(
        f"anchors {r['anchors']}, targets {r['targets']} (requested anchor share "
        f"{r['requested_anchor_share']}); rejections {m['rejections']}; wrote {out}/selected.jsonl"
    )


def _load_mapping(path: Path) -> dict:
    """A JSON or YAML file holding one mapping (a config section)."""
    import yaml

    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping")
    return data


def _summary_table(summary) -> Table:
    table = Table(
        title=escape(f"{summary.agent}: {summary.tasks} tasks × {summary.trials_per_task} trials")
        + f" ({summary.infra_errors} infrastructure errors excluded)"
    )
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("95% interval", justify="right")
    for k, v in summary.pass_hat_k.items():
        lo, hi = summary.intervals[f"pass_hat_{k}"]
        table.add_row(f"pass^{k}", f"{v:.1%}", f"{lo:.1%} – {hi:.1%}")
    for k, v in summary.pass_at_k.items():
        if k != "1":
            table.add_row(f"pass@{k}", f"{v:.1%}", "")
    for bucket, share in summary.buckets.items():
        table.add_row(f"tasks {bucket}", f"{share:.1%}", "")
    for mode, rate in summary.failure_modes.items():
        table.add_row(f"{mode} (trials / tasks)", f"{rate.trials:.1%} / {rate.tasks:.1%}", "")
    table.add_row("failures that looked complete", f"{summary.looked_complete_share:.1%}", "")
    if summary.user_simulator_failures:
        table.add_row("failures due to the user simulator", f"{summary.user_simulator_failures:.1%}", "")
    cps = summary.cost.cost_per_success
    table.add_row("cost per success", "—" if cps is None else f"{cps:.4f} {summary.cost.currency}", "")
    return table


def _scripted_agent(name: str, flaw_rate: float, seed: int):
    """The oracle or a flawed agent; each episode is played by its world's domain's own (`ByDomain`)."""
    from pipeline.agents.registry import FromDomain, by_domain

    if name == "oracle":
        return by_domain(FromDomain("oracle", "the oracle agent"))
    if name == "flawed":
        rates = {m: flaw_rate for m in ("plan_adherence", "invention", "misread")}
        return by_domain(FromDomain("flaws", "the flawed agent", rates, seed=seed))
    _fail(f"unknown agent {name!r}: choose 'oracle' or 'flawed'")


if __name__ == "__main__":
    app()
