"""`agentloop tasks ...`: import τ²-bench tasks, generate a world's tasks, validate a task file."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from pipeline.cli.console import console
from pipeline.cli.errors import fail
from pipeline.cli.tau2 import import_tau2_cmd, lint_cmd

app = typer.Typer(help="Task files: generate, validate.", no_args_is_help=True)
app.command("import-tau2")(import_tau2_cmd)
app.command("lint")(lint_cmd)


@app.command("generate")
def tasks_generate(
    world: str = typer.Option(..., help="World reference: gen-<seed>[-PxUxO] or a domain directory."),
    n: int = typer.Option(100, min=1, max=100_000, help="Number of tasks (at most 100,000)."),
    seed: int = typer.Option(0),
    out: Path = typer.Option(..., help="Output tasks.jsonl."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from the world)."),
    template: list[str] = typer.Option(
        None, help="Only this template of the domain's synthesis kit (repeatable; default: the whole cycle)."
    ),
    plain: bool = typer.Option(
        False, help="Only tasks without messes (every yes/no dial off: e.g. the customer knows the email)."
    ),
    llm: str = typer.Option(
        None, help="openai:MODEL@URL: a language model rewords requests and proposes evolutions (kept if verified)."
    ),
    llm_proposals: int = typer.Option(0, min=0, help="Evolutions the --llm model proposes (kept only if verified)."),
    allow_fewer: bool = typer.Option(
        False, help="Write what the world holds when it holds fewer than --n tasks (default: refuse, exit 2)."
    ),
) -> None:
    """Generate verified tasks (gold end state reachable) grounded in a world, with its domain's task generator.

    A world that yields fewer tasks than --n is refused in one line saying how many it yields, unless
    --allow-fewer: a task file shorter than asked would otherwise pass for the size the command was given."""
    from pipeline.dataset import distinct_tasks, write_tasks
    from pipeline.outputs import check_output
    from pipeline.world import load_world

    check_output(out, "--out", inputs={"--world": world})
    loaded = load_world(world, domain)
    generate_tasks = loaded.domain.require("tasks", needed_for="agentloop tasks generate")
    from pipeline.synth import generate_selected

    # a small world's generator repeats tasks: only distinct ones count towards --n
    tasks = distinct_tasks(
        generate_selected(generate_tasks, loaded, n, seed=seed, templates=template or None, plain=plain)
    )
    if len(tasks) < n and not allow_fewer:
        which = " of the templates and dials asked for" if template or plain else ""
        fail(
            f"--n {n}: world {loaded.name!r} yields only {len(tasks)} distinct tasks{which}; pass --n {len(tasks)}"
            " or --allow-fewer to write them"
        )
    if llm_proposals and not llm:
        fail("--llm-proposals needs --llm openai:MODEL@URL (the model that proposes them)")
    if llm:
        tasks = _with_llm(loaded, tasks, out, llm, llm_proposals, seed)
    write_tasks(out, tasks)
    console.print(f"{len(tasks)} tasks → {out}")


@app.command("validate")
def tasks_validate(
    path: Path = typer.Argument(..., help="A tasks.jsonl file."),
    world: str = typer.Option(None, help="World reference to check against (default: the world the tasks name)."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from the world)."),
) -> None:
    """Check a task file against the schema and the world it runs in; errors name the line or task and the field."""
    from pipeline.grading import validate_file

    console.print(escape(validate_file(path, world, domain)), soft_wrap=True)


def _with_llm(loaded, tasks, out: Path, llm: str, proposals: int, seed: int):
    """Requests reworded and evolutions proposed by a language model; only what the world verifies is kept."""
    import json

    from pipeline.explore import LLMRoles, LLMSpec, with_llm
    from pipeline.outputs import atomic_write

    roles = LLMRoles(LLMSpec.parse(llm), seed=seed)
    tasks = with_llm(loaded, tasks, roles, proposals, seed=seed)
    report = out.with_name(out.name.removesuffix(".jsonl") + ".llm.json")
    atomic_write(report, json.dumps(roles.report.to_dict(), indent=2) + "\n")
    r = roles.report
    rejected, dropped = sum(r.phrasing_rejected.values()), dict(r.dropped)
    console.print(
        f"--llm: {r.phrased} requests rephrased ({rejected} rejected); "
        f"{r.verified}/{r.proposed} proposals verified, dropped {dropped} → {report}"
    )
    return tasks
