"""`agentloop`: one subcommand per job of the loop, one module per command group.

Each module defines its commands with their options; this one builds the app from them. Options that set a field
of a job's config class are generated from the class (`pipeline.cli.options`) when the command runs or shows its
--help. Heavy libraries (torch, transformers, TRL, Ray, MLflow) and the jobs themselves are imported inside the
commands, so `agentloop --help` stays fast. Errors become one line and exit code 2 in one place
(`pipeline.cli.errors`).
"""

from __future__ import annotations

import logging

import typer

from pipeline.cli import (
    curate,
    env,
    gate,
    gate_aa,
    measure,
    model,
    report,
    rollout,
    serve,
    synthesize,
    target,
    tasks,
    tau2,
    train,
    world,
)
from pipeline.cli.errors import AgentloopGroup
from pipeline.cli.options import ConfigCommand

app = typer.Typer(
    cls=AgentloopGroup,
    help="agentloop: measure, target, synthesize, curate, train, gate.",
    no_args_is_help=True,
)


@app.callback()
def main(verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging.")) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("agentloop.progress").setLevel(logging.INFO)  # off a terminal, progress is log lines


app.add_typer(world.app, name="world")
app.add_typer(tasks.app, name="tasks")
app.command("gate-aa")(gate_aa.gate_aa_cmd)
app.command("rollout")(rollout.rollout)
app.command("measure", cls=ConfigCommand)(measure.measure_cmd)
app.command("serve")(serve.serve_cmd)
app.command("report")(report.report_cmd)
app.command("gate", cls=ConfigCommand)(gate.gate_cmd)
app.command("target")(target.target_cmd)
app.command("synthesize", cls=ConfigCommand)(synthesize.synthesize_cmd)
app.command("curate", cls=ConfigCommand)(curate.curate_cmd)
app.add_typer(train.app, name="train")
app.add_typer(tau2.import_app, name="import")
app.add_typer(tau2.export_app, name="export")
app.add_typer(model.app, name="model")
app.add_typer(env.app, name="env")

__all__ = ["app"]
