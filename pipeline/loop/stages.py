"""One function per DVC stage. Each reads its params section, calls the library, writes the stage's outputs.

Paths come from `pipeline.loop.paths` (dvc.yaml lists the same ones). Models are directories holding an
`agent.json` (which agent measures them, `pipeline.loop.agentref`) and, for checkpoints, the checkpoint itself in
`checkpoint/`, referenced relative to the directory so that the directory can be registered and fetched as is.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from pipeline.errors import InputError
from pipeline.loop import paths
from pipeline.loop.agentref import (
    AGENT_FILE,
    CHECKPOINT_BACKENDS,
    CHECKPOINT_DIR,
    AgentRefError,
    read_agent_ref,
    read_agent_spec,
    write_agent_ref,
    write_checkpoint_ref,
)
from pipeline.loop.metrics_files import gate_metrics, measure_metrics, write_metrics
from pipeline.loop.params import Params, ParamsError
from pipeline.measure import sampled
from pipeline.outputs import atomic_write, writing
from pipeline.progress import track

log = logging.getLogger(__name__)


def make_eval_tasks(p: Params) -> int:
    """The frozen held-out tasks, drawn from the evaluation world (never used for training)."""
    from pipeline.dataset import write_tasks
    from pipeline.world import load_world

    world = load_world(p.world.eval_world, p.world.domain)
    generate_tasks = world.domain.require("tasks", needed_for="the held-out evaluation tasks (stage eval_tasks)")
    tasks = generate_tasks(world, p.world.eval_tasks, seed=p.world.seed)
    return write_tasks(paths.EVAL_TASKS, tasks)


def build_embedded_data(p: Params) -> dict:
    """What the embedded default trains on: its tokenizer and flawed corpus, encoded (a minute, not an hour)."""
    from pipeline.embedded import build_data

    if paths.EMBEDDED_DATA.exists():
        shutil.rmtree(paths.EMBEDDED_DATA)
    return build_data(p.embedded_config(), paths.EMBEDDED_DATA)


def build_embedded(p: Params) -> dict:
    """The embedded default checkpoint, trained on the `embedded_data` stage's output from nothing downloaded."""
    from pipeline.embedded import build_baseline as build

    out = paths.EMBEDDED_MODEL
    if out.exists():
        shutil.rmtree(out)
    return build(p.embedded_config(), out, paths.EMBEDDED_DATA)


def build_baseline(p: Params) -> str:
    """The model this iteration starts from: the embedded default, a registered version (`champion`,
    `challenger` or a number; its files fetched and checked against the registered digest), or a given agent."""
    out = paths.BASELINE_MODEL
    if out.exists():
        shutil.rmtree(out)
    source = p.baseline.source
    if source.startswith("agent:"):
        spec = source.removeprefix("agent:")
        write_agent_ref(out, spec, source=source)
        return spec
    if source == "embedded":
        if not (paths.EMBEDDED_MODEL / "agentloop.json").exists():
            raise InputError(f"{paths.EMBEDDED_MODEL}: no embedded checkpoint; run `dvc repro embedded`")
        with writing(out, "the baseline folder is incomplete; free space and run the stage again"):
            shutil.copytree(paths.EMBEDDED_MODEL, out / CHECKPOINT_DIR)
        write_checkpoint_ref(out, "hf", source=source)
        return read_agent_spec(out)
    return _fetch_registered(p, source, out)


def _fetch_registered(p: Params, source: str, out: Path) -> str:
    """A registered version into `out`: its files as registered (digest checked), its agent loaded from there."""
    from pipeline.tracking import TrackingConfig, fetch_version

    config = TrackingConfig(experiment=p.promote.experiment, model_name=p.promote.model_name)
    version, digest = fetch_version(out, source, config)
    where = f"{config.model_name} version {version}"
    extra = {"source": source, "version": version, "registered_digest": digest}
    if not (out / AGENT_FILE).exists():  # a bare checkpoint, registered without a reference
        files = list(out.iterdir())
        (out / CHECKPOINT_DIR).mkdir()
        for f in files:
            f.rename(out / CHECKPOINT_DIR / f.name)
        write_checkpoint_ref(out, "hf", **extra)
        return read_agent_spec(out)
    ref = read_agent_ref(out)
    if "spec" in ref:
        kind, _, body = ref["spec"].partition(":")
        if kind not in CHECKPOINT_BACKENDS:  # an agent without files (a scripted one, an endpoint)
            write_agent_ref(out, ref["spec"], **extra)
            return ref["spec"]
        path, _, options = body.partition(",")
        if not (out / CHECKPOINT_DIR).is_dir():
            raise AgentRefError(
                f"{where}: its {AGENT_FILE} names {ref['spec']!r}, a checkpoint outside the registered files"
            )
        # Registered before references were relative: the spec names the workspace it was trained in; the
        # checkpoint it meant is the one registered beside it.
        log.warning("%s names %r; measuring the checkpoint registered with it instead", where, path)
        ref = {"backend": kind, "checkpoint": CHECKPOINT_DIR, "options": options}
    if ref["checkpoint"] != CHECKPOINT_DIR:
        raise AgentRefError(f"{where}: {AGENT_FILE} names checkpoint {ref['checkpoint']!r}, not {CHECKPOINT_DIR!r}")
    recorded = ref.get("checkpoint_digest")
    write_checkpoint_ref(out, ref["backend"], ref.get("options") or "", **extra)
    got = read_agent_ref(out)["checkpoint_digest"]
    if recorded is not None and recorded != got:
        raise AgentRefError(f"{where}: the checkpoint's digest {got} is not the {recorded} its {AGENT_FILE} records")
    return read_agent_spec(out)


def eval_tasks_file(p: Params) -> Path:
    """The held-out tasks measure, target, gate and report read: `measure.tasks` if set, else the generated ones."""
    return p.measure.tasks or paths.EVAL_TASKS


def _measure(p: Params, model_dir: Path, out: Path):
    from pipeline.measure import measure

    config = p.measure.model_copy(
        update={
            "world": p.world.eval_world,
            "domain": p.world.domain,
            "tasks": eval_tasks_file(p),
            "agent": read_agent_spec(model_dir),
            "verdict": p.gate.verdict,
            "limits": p.gate.limits,  # measured under the limits the gate re-grades under
        }
    )
    if out.exists():
        shutil.rmtree(out)
    total = sum(1 for line in eval_tasks_file(p).read_text().splitlines() if line.strip()) * config.trials
    with track(out.name, total, "trials") as progress:
        return measure(config, out, on_trial=lambda record: progress.advance(record.passed))


def measure_baseline(p: Params):
    summary = _measure(p, paths.BASELINE_MODEL, paths.BASELINE_RUN)
    write_metrics(paths.METRICS_DIR / "baseline.json", measure_metrics(summary))
    return summary


def remeasure_candidate(p: Params):
    summary = _measure(p, paths.CANDIDATE_MODEL, paths.CANDIDATE_RUN)
    write_metrics(paths.METRICS_DIR / "candidate.json", measure_metrics(summary))
    return summary


def make_targets(p: Params):
    from pipeline.target import make_targets as split

    run = paths.BASELINE_RUN
    targets = split(
        run / "metrics.json",
        p.target.budget,
        p.target.config,
        run / "verdicts.jsonl",
        eval_tasks_file(p),
        domain=p.world.domain,
    )
    targets.write(paths.TARGETS)
    return targets


def synthesize(p: Params):
    from pipeline.synth import synthesize as run
    from pipeline.target import Targets
    from pipeline.world import load_world

    if paths.SYNTH_DIR.exists():
        shutil.rmtree(paths.SYNTH_DIR)
    world = load_world(p.train_world(), p.world.domain)
    held_out = eval_tasks_file(p)
    result = run(
        world, Targets.read(paths.TARGETS), paths.SYNTH_DIR, p.synthesize.config, targets_file=paths.TARGETS,
        held_out=held_out,
    )  # fmt: skip
    chosen = {t.id for t in result.tasks}
    write_anchors(world, p.synthesize.anchors, p.synthesize.config.seed, p.synthesize.config.verify, chosen, held_out)
    return result


def write_anchors(
    world,
    n: int,
    seed: int,
    verify=None,
    exclude: frozenset[str] | set[str] = frozenset(),
    held_out: Path | None = None,
) -> int:
    """Gold trajectories of plain generated tasks (the default template mix) on the training side of the world
    (its training partition where its customers are split), verified by the grader; for a domain whose synthesis
    selects from a pool, of pool tasks drawn with `seed` and verified like selected ones. None may hold an
    evaluation customer or a held-out task of `held_out` (`pipeline.authoring.heldout`)."""
    from pipeline.authoring import SelectionKit, generate_tasks
    from pipeline.authoring import held_out as held
    from pipeline.embedded import run_corpus
    from pipeline.synth import VerifyConfig, anchor_trajectories

    kit = world.domain.capability("synthesis")
    tasks = []
    if isinstance(kit, SelectionKit):
        gold = anchor_trajectories(world, kit, n, 10_000 + seed, verify or VerifyConfig(), exclude)
    else:
        tasks = generate_tasks(world, n, seed=10_000 + seed, side="train") if n else []
        oracle = world.domain.require("oracle", needed_for="the anchors (stage synthesize)")
        gold = run_corpus(world, tasks, oracle(), trials=1, seed=seed, passing_only=True)
    guard = held([held_out], world)
    guard.check_tasks(tasks, str(paths.ANCHORS))
    guard.check_trajectories(gold, {t.id: t for t in tasks}, str(paths.ANCHORS))
    atomic_write(paths.ANCHORS, "".join(t.without_timings().model_dump_json() + "\n" for t in gold))
    return len(gold)


def curate(p: Params) -> dict:
    from pipeline.curate import curate as run

    config = p.curate.model_copy(
        update={
            "pool": [paths.SYNTH_DIR / "trajectories.jsonl"],
            "tasks": paths.SYNTH_DIR / "tasks.jsonl",
            "world": p.train_world(),
            "domain": p.world.domain,
            "agent": sampled(read_agent_spec(paths.BASELINE_MODEL), p.measure.temperature),  # probed as measured
            "ray_address": p.measure.ray_address,
            "concurrency": p.measure.concurrency,
            "limits": p.gate.limits,
            "held_out": eval_tasks_file(p),
        }
    )
    if paths.CURATED_DIR.exists():
        shutil.rmtree(paths.CURATED_DIR)
    with track("curate probes", None, "probes") as progress:
        return run(
            config,
            paths.CURATED_DIR,
            on_probe=lambda result: progress.advance(result.verdict.passed),
            on_total=progress.set_total,
        )


def train_candidate(p: Params) -> str:
    out = paths.CANDIDATE_MODEL
    if out.exists():
        shutil.rmtree(out)
    method = p.train.method
    if method.startswith("agent:"):
        spec = method.removeprefix("agent:")
        write_agent_ref(out, spec, method=method)
        return spec
    from pipeline.train import run_sft

    base = read_agent_spec(paths.BASELINE_MODEL)
    if base.startswith("program:"):
        return _train_program(p, base, out)
    engine, _, body = base.partition(":")
    if engine not in ("hf", "llamacpp") or not body:
        raise ParamsError(f"train.method 'sft' needs a checkpoint baseline, but the baseline agent is {base!r}")
    base_path, _, options = body.partition(",")  # the candidate keeps the baseline's engine and options
    data = [paths.CURATED_DIR / "selected.jsonl"] if p.train.use_curated else []
    data.append(paths.SYNTH_DIR / "trajectories.jsonl")
    params = p.train.sft_config(
        base=Path(base_path),
        data=data,
        tasks=[paths.SYNTH_DIR / "tasks.jsonl"],
        anchors=[paths.ANCHORS] if paths.ANCHORS.exists() else [],
        held_out=[eval_tasks_file(p)],
    )
    run_sft(params, out / CHECKPOINT_DIR)
    write_checkpoint_ref(out, engine, options, method=method)
    return read_agent_spec(out)


def _train_program(p: Params, spec: str, out: Path) -> str:
    """An agent program's model trained on the calls the program itself makes: the synthesized (and curated)
    conversations replayed through the program with the gold teacher as its model (`pipeline.programs.teacher`),
    SFT of the checkpoint it serves (`serve=PATH`) on the recorded calls; the candidate is the same program serving
    the trained checkpoint."""
    from pipeline.dataset import read_tasks
    from pipeline.programs import ProgramAgent, replay_in_their_worlds, with_settings
    from pipeline.train import run_sft
    from pipeline.train.sft import read_trajectories
    from pipeline.users import ScriptedUser

    served = ProgramAgent(spec).serve
    if served is None:
        raise ParamsError(
            f"train.method 'sft' on the program baseline {spec!r} needs the checkpoint it serves: program:…,serve=PATH"
        )
    tasks = [paths.SYNTH_DIR / "tasks.jsonl"]
    data = [paths.CURATED_DIR / "selected.jsonl"] if p.train.use_curated else []
    data.append(paths.SYNTH_DIR / "trajectories.jsonl")
    sources = {"data": data, "anchors": [paths.ANCHORS] if paths.ANCHORS.exists() else []}
    known = [t for path in tasks for t in read_tasks(path)]
    rendered: dict[str, list[Path]] = {}
    for kind, files in sources.items():
        golds = [t for path in files for t in read_trajectories(path)]
        replayed = replay_in_their_worlds(spec, golds, known, ScriptedUser())
        log.info("program calls for %s: %s", kind, replayed.counts)
        path = out / f"program_{kind}.jsonl"
        atomic_write(path, "".join(t.model_dump_json() + "\n" for t in replayed.trajectories))
        rendered[kind] = [path] if replayed.trajectories else []
    params = p.train.sft_config(
        base=Path(served),
        data=rendered["data"],
        tasks=tasks,
        anchors=rendered["anchors"],
        held_out=[eval_tasks_file(p)],
        render="model_calls",
    )
    run_sft(params, out / CHECKPOINT_DIR)
    candidate = with_settings(spec, serve=str(out / CHECKPOINT_DIR))
    write_agent_ref(out, candidate, method=p.train.method)
    return candidate


def gate(p: Params):
    """Candidate against the baseline it was trained from (the champion, or the embedded default at first)."""
    from pipeline.gate import decide, write_gate
    from pipeline.world import load_world

    world = load_world(p.world.eval_world, p.world.domain)
    decision = decide(paths.CANDIDATE_RUN, paths.BASELINE_RUN, eval_tasks_file(p), world, p.gate)
    write_gate(decision, paths.GATE)
    write_metrics(paths.METRICS_DIR / "gate.json", gate_metrics(decision.model_dump(mode="json")))
    return decision


def report(p: Params) -> Path:
    from pipeline.loop.history import iteration_history
    from pipeline.report import build_report

    return build_report(
        paths.BASELINE_RUN,
        paths.CANDIDATE_RUN,
        eval_tasks_file(p),
        p.world.eval_world,
        gate_json=paths.GATE,
        out=paths.REPORT_DIR / "report.html",
        max_flips=p.report.max_flips,
        verdict=p.gate.verdict,
        history=iteration_history(p),
    )
