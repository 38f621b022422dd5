"""`agentloop synthesize`: targeted, evolved, verified tasks with gold trajectories, in a generated world."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from pipeline.cli.console import console, load_mapping, stdout
from pipeline.cli.options import config_options
from pipeline.progress import track


@config_options(
    "pipeline.synth.synthesize:SynthConfig",
    fields=("seed", "max_generations"),
    names={"max_generations": "generations"},
)
def synthesize_cmd(
    *,
    world: str = typer.Option(..., help="A generated world: gen-<seed>[-PxUxO] (never the evaluation world)."),
    targets: Path = typer.Option(..., help="targets.json from `agentloop target`."),
    out: Path = typer.Option(
        ..., help="Output directory: tasks.jsonl, trajectories.jsonl, manifest.json, provenance.json."
    ),
    settings: dict[str, Any],
    config: Path = typer.Option(None, help="SynthConfig as JSON or YAML (overrides --seed/--generations)."),
    judge_url: str = typer.Option(None, help="OpenAI-compatible base URL for the optional judge cascade."),
    judge_model: str = typer.Option(None, help="Model name for the judge cascade."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from the world)."),
    llm: str = typer.Option(
        None, help="openai:MODEL@URL: a language model rewords requests and proposes evolutions (kept if verified)."
    ),
    llm_proposals: int = typer.Option(0, min=0, help="Evolutions the --llm model proposes (kept only if verified)."),
    held_out: Path = typer.Option(None, help="Held-out tasks.jsonl: refuse a task about one of its customers."),
) -> None:
    """Targeted, evolved, verified tasks grounded in a generated world, with the oracle's gold trajectories."""
    from pipeline.outputs import check_output
    from pipeline.synth import SynthConfig, synthesize
    from pipeline.target import Targets
    from pipeline.world import load_world

    check_output(
        out,
        "--out",
        folder=True,
        inputs={"--world": world, "--targets": targets, "--config": config, "--held-out": held_out},
        owned=("tasks.jsonl", "trajectories.jsonl", "manifest.json", "provenance.json"),
    )
    data = load_mapping(config) if config else settings
    if judge_url:
        data["judge"] = {"base_url": judge_url, "model": judge_model or "judge"}
    cfg = SynthConfig.model_validate(data)
    the_targets = Targets.read(targets)
    w = load_world(world, domain)
    total = sum(t.count for t in the_targets.modes.values())
    refine = _llm_refine(w, llm, llm_proposals, cfg.seed)
    with track("synthesize", total, "tasks", console=console) as progress:
        result = synthesize(
            w, the_targets, out, cfg, on_task=lambda _: progress.advance(), targets_file=targets, refine=refine,
            held_out=held_out,
        )  # fmt: skip
    m = result.manifest
    table = Table(title=f"synthesized {m['tasks']} tasks in {w.name} ({m['generations']} generations)")
    table.add_column("mode")
    table.add_column("target", justify="right")
    table.add_column("made", justify="right")
    for mode, n in m["targets"].items():
        table.add_row(mode, str(n), str(m["counts"]["by_mode"].get(mode, 0)))
    stdout().print(table)
    if "llm" in m:
        r = m["llm"]
        console.print(f"--llm: {r['phrased']} requests rephrased ({sum(r['phrasing_rejected'].values())} rejected); "
                      f"{r['verified']}/{r['proposed']} proposals verified")  # fmt: skip
    cov, rw = m["coverage"], m["rework"]["totals"]
    console.print(
        f"coverage {cov['covered']}/{cov['cells']} cells; first try {rw['first_try']}, reworked "
        f"{rw['reworked']}, dropped {rw['dropped']}; wrote {out}/tasks.jsonl, trajectories.jsonl, "
        "manifest.json, provenance.json"
    )


def _llm_refine(world, llm: str | None, proposals: int, seed: int):
    """The language-model roles as a step on the synthesis result (None without --llm)."""
    from pipeline.cli.errors import fail

    if proposals and not llm:
        fail("--llm-proposals needs --llm openai:MODEL@URL (the model that proposes them)")
    if not llm:
        return None
    from pipeline.explore import LLMRoles, LLMSpec
    from pipeline.synth import refine

    roles = LLMRoles(LLMSpec.parse(llm), seed=seed)
    return lambda result: refine(world, result, roles, proposals, seed=seed)
