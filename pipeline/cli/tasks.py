"""`agentloop tasks ...`: import τ²-bench tasks, generate a world's tasks, validate a task file."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from pipeline.cli.console import console
from pipeline.cli.errors import failing
from pipeline.cli.tau2 import import_tau2_cmd, lint_cmd

app = typer.Typer(help="Task files: generate, validate.", no_args_is_help=True)
app.command("import-tau2")(import_tau2_cmd)
app.command("lint")(lint_cmd)


@app.command("generate")
def tasks_generate(
    world: str = typer.Option(..., help="World reference: gen-<seed>[-PxUxO] or a domain directory."),
    n: int = typer.Option(100, min=1, help="Number of tasks."),
    seed: int = typer.Option(0),
    out: Path = typer.Option(..., help="Output tasks.jsonl."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from the world)."),
    template: list[str] = typer.Option(
        None, help="Only this template of the domain's synthesis kit (repeatable; default: the whole cycle)."
    ),
    plain: bool = typer.Option(
        False, help="Only tasks without messes (every yes/no dial off: e.g. the customer knows the email)."
    ),
) -> None:
    """Generate verified tasks (gold end state reachable) grounded in a world, with its domain's task generator."""
    from pipeline.dataset.io import write_tasks
    from pipeline.outputs import check_output
    from pipeline.world.registry import load_world

    check_output(out, "--out", inputs={"--world": world})
    loaded = load_world(world, domain)
    generate_tasks = loaded.domain.require("tasks", needed_for="agentloop tasks generate")
    from pipeline.synth.plain import generate_selected

    with failing(ValueError):
        tasks = generate_selected(generate_tasks, loaded, n, seed=seed, templates=template or None, plain=plain)
    write_tasks(out, tasks)
    console.print(f"{len(tasks)} tasks → {out}")


@app.command("validate")
def tasks_validate(
    path: Path = typer.Argument(..., help="A tasks.jsonl file."),
    world: str = typer.Option(None, help="World reference to check against (default: the world the tasks name)."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from the world)."),
) -> None:
    """Check a task file against the schema and the world it runs in; errors name the line or task and the field."""
    from pipeline.dataset.validate import validate_file

    with failing(ValueError, LookupError):
        console.print(escape(validate_file(path, world, domain)), soft_wrap=True)
