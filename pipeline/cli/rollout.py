"""`agentloop rollout`: scripted episodes (the oracle or a flawed agent), graded, written as trajectories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from pipeline.cli.console import console, stdout
from pipeline.cli.errors import fail
from pipeline.progress import track


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
    from pipeline.dataset import check_provenance, read_tasks
    from pipeline.grading import check_tasks, grade
    from pipeline.outputs import atomic_file, check_output
    from pipeline.rollout import run_episode
    from pipeline.users import ScriptedUser
    from pipeline.world import load_world

    verdict_path = out.with_suffix(".verdicts.jsonl")
    for path in (out, verdict_path):
        check_output(path, "--out", inputs={"--tasks": tasks, "--world": world})
    if out.resolve() == verdict_path.resolve():
        fail(f"--out {out}: the verdicts file would be the trajectories file; give a .jsonl name")
    task_list = read_tasks(tasks)
    if not task_list:
        fail(f"{tasks}: no tasks")
    the_agent = scripted_agent(agent, flaw_rate, seed)
    w = load_world(world)
    check_provenance(tasks, w)  # tasks made in another domain or world (or its tables since changed)
    check_tasks(w, task_list, str(tasks))  # as measure: tasks of another world would be graded for nothing
    user = ScriptedUser()
    passed = total = 0
    progress_bar = track("episodes", len(task_list) * trials, "episodes", console=console)
    with atomic_file(out) as ft, atomic_file(verdict_path) as fv, progress_bar as progress:
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
    stdout().print(table)


def scripted_agent(name: str, flaw_rate: float, seed: int) -> Any:
    """The oracle or a flawed agent; each episode is played by its world's domain's own (`ByDomain`)."""
    from pipeline.agents import FromDomain, by_domain, default_rates

    if name == "oracle":
        return by_domain(FromDomain("oracle", "the oracle agent"))
    if name == "flawed":
        rates = default_rates(flaw_rate)
        return by_domain(FromDomain("flaws", "the flawed agent", rates, seed=seed))
    fail(f"unknown agent {name!r}: choose 'oracle' or 'flawed'")
