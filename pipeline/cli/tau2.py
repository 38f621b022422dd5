"""τ²-bench on the command line: `agentloop tasks import-tau2` (its tasks), `agentloop tasks lint` (what in them
would make a score mean less), `agentloop import tau2-run` (its results files, as our runs) and `agentloop export
tau2-submission` (our runs, as its leaderboard's submission.json)."""

from __future__ import annotations

from pathlib import Path

import typer

from pipeline.cli.console import console
from pipeline.cli.errors import fail

import_app = typer.Typer(help="Import runs made elsewhere: τ²-bench results files.", no_args_is_help=True)

export_app = typer.Typer(help="Export our runs for elsewhere: τ²-bench's leaderboard.", no_args_is_help=True)


@import_app.command("tau2-run")
def tau2_run(
    results: Path = typer.Argument(..., help="The JSON file `tau2 run` saved (info, tasks, simulations)."),
    domain: Path = typer.Option(
        ..., help="The τ²-bench domain directory the run used (db.json, tasks.json, policy.md)."
    ),
    out: Path = typer.Option(..., help="Run directory to write, e.g. runs/NAME."),
    verdict: str = typer.Option("strict", help="Verdict metrics.json counts passes by: strict or tau2."),
    upstream_tools: bool = typer.Option(
        False,
        help="Replay with τ²-bench's tool quirks for the τ²-compatible reward (the domain's tau2_quirks).",
    ),
) -> None:
    """Turn a τ²-bench results file into a run directory, re-graded with both verdicts, for gate and report."""
    from pipeline.grading import VERDICTS, Tau2Config
    from pipeline.outputs import check_output
    from pipeline.tau2 import import_run

    if verdict not in VERDICTS:
        fail(f"--verdict {verdict!r}: expected strict or tau2")
    check_output(out, "--out", folder=True, inputs={"RESULTS": results, "--domain": domain})
    record = import_run(results, domain, out, verdict=verdict, tau2=Tau2Config(upstream_tools=upstream_tools))  # type: ignore[arg-type]
    console.print(
        f"{record['trials']} trials of {record['tasks']} tasks → {out}: strict {record['strict_passes']} pass,"
        f" τ² {record['tau2_passes']} pass, {record['disagreements']} disagree; τ²-compatible reward equals the"
        f" file's on {record['upstream_agreement']}/{record['upstream_rewards']}"
        f" ({record['seconds']:.1f} s; tasks for --tasks: {out / 'tasks.jsonl'})"
    )


def import_tau2_cmd(
    domain: Path = typer.Option(..., help="τ²-bench domain directory (db.json, tasks.json, policy.md)."),
    out: Path = typer.Option(..., help="Output tasks.jsonl."),
    split: str = typer.Option(None, help="A split of split_tasks.json (train, test, base); default: every task."),
    kind: str = typer.Option(
        None, "--kind", help="Domain name or module:attribute (default: the domain whose tables db.json holds)."
    ),
) -> None:
    """Convert τ²-bench tasks, keeping the user scenario, the gold actions with their requestor,
    communicate_info, NL assertions, reward basis and initial state; end states come from replaying gold."""
    from pipeline.outputs import check_output
    from pipeline.tau2 import write_import

    check_output(out, "--out", inputs={"--domain": domain})
    imported = write_import(domain, out, split, kind)
    part = f" (split {split})" if split else ""
    refused = f"; {len(imported.refused)} with gold writes our tools refuse" if imported.refused else ""
    console.print(f"{len(imported.tasks)} τ²-bench tasks{part} of {imported.world.name} → {out}{refused}")


def lint_cmd(
    domain: Path = typer.Option(..., help="τ²-bench domain directory (db.json, tasks.json, policy.md)."),
    split: str = typer.Option(None, help="A split of split_tasks.json (train, test, base); default: every task."),
    kind: str = typer.Option(
        None, "--kind", help="Domain name or module:attribute (default: the domain whose tables db.json holds)."
    ),
    out: Path = typer.Option(None, help="Write the summary and every finding as JSON here."),
    strict: bool = typer.Option(False, help="Exit 1 when there is any finding."),
) -> None:
    """Lint τ²-bench tasks: gold actions that fail on replay, a reward basis that passes with nothing done, tools
    the policy names that the agent does not have, counts the scenario never states."""
    from pipeline.outputs import check_output
    from pipeline.tau2 import CLASSES, lint_directory, write_findings

    if out is not None:
        check_output(out, "--out", inputs={"--domain": domain})
    report, findings = lint_directory(domain, split, kind)
    print(f"{report['tasks']} tasks of {report['domain']} ({domain}); policy names {report['policy_names']} tools")
    for c in CLASSES:
        entry = report["classes"][c]
        print(f"{c:<22}{entry['findings']:>5} findings in {entry['tasks']} tasks")
        for e in entry["examples"]:
            print(f"    {e['task_id'] or '(policy)'}: {e['detail']}")
    if out is not None:
        write_findings(out, report, findings)
        console.print(f"→ {out}")
    if strict and findings:
        raise typer.Exit(1)


@export_app.command("tau2-submission")
def tau2_submission(
    run: list[Path] = typer.Option(..., help="A run directory (measure or import tau2-run); one per domain."),
    out: Path = typer.Option(..., help="The submission.json to write."),
    model_organization: str = typer.Option(..., help="Who made the model."),
    submitting_organization: str = typer.Option(..., help="Who ran the evaluation."),
    contact_email: str = typer.Option(None, help="Contact for questions about the submission."),
    contact_name: str = typer.Option(None, help="Name of the submitter."),
    model_name: str = typer.Option(None, help="Default: the model the runs' agent names."),
    submission_type: str = typer.Option(
        "custom", help="custom (our own agent and customer prompts) or standard (τ²-bench's scaffold)."
    ),
    verdict: str = typer.Option("tau2", help="Passes counted by: tau2 (the leaderboard's reward) or strict."),
    tau2_version: str = typer.Option(None, help="τ²-bench version; default: what the data's README says."),
) -> None:
    """Write τ²-bench's leaderboard submission.json from our runs: per domain pass^1..pass^4, the methodology (the
    customer's model, the τ²-bench version, how far our reward agrees with τ²-bench's)."""
    from pipeline.outputs import check_output
    from pipeline.tau2 import build_submission, write_submission

    if submission_type not in ("custom", "standard"):
        fail(f"--submission-type {submission_type!r}: expected custom or standard")
    if verdict not in ("tau2", "strict"):
        fail(f"--verdict {verdict!r}: expected tau2 or strict")
    check_output(out, "--out", inputs={f"--run {r}": r for r in run})
    submission, runs = build_submission(
        run,
        model_name=model_name,
        model_organization=model_organization,
        submitting_organization=submitting_organization,
        contact_email=contact_email,
        contact_name=contact_name,
        submission_type=submission_type,  # type: ignore[arg-type]
        verdict=verdict,
        tau2_bench_version=tau2_version,
    )
    write_submission(out, submission)
    for r in runs:
        figures = ", ".join(f"pass^{k} {getattr(r.results, f'pass_{k}')}" for k in range(1, 5))
        print(f"{r.domain:<8} {len(r.tasks)} tasks, {r.trials} trials: {figures}")
    console.print(f"→ {out}")
