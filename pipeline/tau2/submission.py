"""`agentloop export tau2-submission`: our runs as the `submission.json` τ²-bench's leaderboard takes.

The leaderboard's format (τ²-bench's submission guide and its submission schema): who made the model and who
ran it, a contact, and per domain (retail, airline, telecom) pass^1 … pass^4 as percentages (null where the run
has fewer trials per task than k), optionally the average cost of a trajectory; a methodology (evaluation date,
τ²-bench version, the user simulator's model, notes, and a verification block: prompts modified, tasks omitted).

Each run directory is one domain's (`agentloop measure` or `agentloop import tau2-run`): its domain and
participants are read from trajectories.jsonl, its outcomes from verdicts.jsonl — by default the τ²-compatible
reward, the leaderboard's measure (pass^k per task as C(c, k) / C(n, k), the mean over tasks; trials lost to an
infrastructure error are left out, as τ²-bench leaves them out). The notes say, per domain, how far our reward
agrees with τ²-bench's: with the reward τ²-bench recorded, trial by trial, for an imported run; for a run of
ours, how often the τ²-compatible reward and our strict verdict agree. Every run must use the same agent and the
same user simulator, as the leaderboard requires; tasks missing from a domain's base set mark the submission
`omitted_questions`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from pipeline.errors import InputError
from pipeline.metrics import pass_hat_k
from pipeline.outputs import atomic_write
from pipeline.strict import Strict

DOMAINS = ("retail", "airline", "telecom")
MAX_K = 4


class SubmissionError(InputError, ValueError):
    """Runs that cannot make a submission; the message names the run, the file and the field."""


class ContactInfo(Strict):
    email: str | None = Field(
        default=None,
        pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$",
        description="Contact email for questions about the submission (name@domain.tld).",
    )
    name: str | None = Field(default=None, description="Name of the submitter.")
    github: str | None = Field(default=None, description="GitHub user name.")


class DomainResults(Strict):
    pass_1: float | None = Field(default=None, ge=0, le=100, description="pass^1, percent.")
    pass_2: float | None = Field(default=None, ge=0, le=100, description="pass^2, percent.")
    pass_3: float | None = Field(default=None, ge=0, le=100, description="pass^3, percent.")
    pass_4: float | None = Field(default=None, ge=0, le=100, description="pass^4, percent.")
    cost: float | None = Field(default=None, ge=0, description="Average cost of one trajectory, USD.")


class Verification(Strict):
    modified_prompts: bool | None = Field(default=None, description="Agent or user simulator prompts modified.")
    omitted_questions: bool | None = Field(default=None, description="Tasks of the base split left out.")
    details: str | None = None


class Methodology(Strict):
    evaluation_date: date | None = None
    tau2_bench_version: str | None = None
    user_simulator: str | None = Field(default=None, description="The customer's model.")
    notes: str | None = None
    verification: Verification | None = None


class Submission(Strict):
    model_name: str = Field(min_length=1, pattern=r"\S")
    model_organization: str = Field(min_length=1, pattern=r"\S", description="Who made the model (not blank).")
    submitting_organization: str = Field(min_length=1, pattern=r"\S", description="Who ran the evaluation (not blank).")
    submission_date: date
    submission_type: Literal["standard", "custom"] = "custom"
    contact_info: ContactInfo
    results: dict[Literal["retail", "airline", "telecom"], DomainResults]
    trajectories_available: bool = False
    methodology: Methodology | None = None


class RunSummary(BaseModel):
    """What one run directory contributes."""

    directory: str
    domain: str
    agent: str
    user: str
    tasks: list[str]
    trials: int
    results: DomainResults
    agreement: str


def _lines(path: Path) -> list[dict]:
    if not path.exists():
        raise SubmissionError(f"{path}: file not found (a run directory of agentloop measure or import tau2-run)")
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SubmissionError(f"{path}: line {n}: invalid JSON: {exc.msg}") from None
    if not out:
        raise SubmissionError(f"{path}: no trials")
    return out


def _one(path: Path, rows: list[dict], field: str) -> str:
    values = sorted({str(r.get(field)) for r in rows})
    if len(values) != 1:
        raise SubmissionError(f"{path}: field {field}: the trials name several ({', '.join(values)}); one per run")
    return values[0]


def summarize_run(run: str | Path, verdict: str = "tau2") -> RunSummary:
    """One run directory's domain, participants, pass^1..4 and how far our reward agrees with τ²-bench's."""
    run = Path(run)
    trajectories = _lines(run / "trajectories.jsonl")
    verdicts = [row["verdict"] for row in _lines(run / "verdicts.jsonl")]
    if len(verdicts) != len(trajectories):
        raise SubmissionError(f"{run}: {len(trajectories)} trajectories but {len(verdicts)} verdicts")
    domain = _one(run / "trajectories.jsonl", trajectories, "domain")
    if domain not in DOMAINS:
        raise SubmissionError(f"{run / 'trajectories.jsonl'}: field domain: {domain!r} is not one of {DOMAINS}")
    outcomes: dict[str, list[bool]] = {}
    both = agree = 0
    for n, v in enumerate(verdicts, start=1):
        if v.get("infra_error"):
            continue
        tau2 = v.get("tau2")
        if verdict == "tau2" and tau2 is None:
            raise SubmissionError(
                f"{run / 'verdicts.jsonl'}: line {n}: field verdict.tau2: no τ²-compatible reward (the task has no"
                " τ²-bench criteria); use --verdict strict"
            )
        passed = bool(tau2["passed"]) if verdict == "tau2" else bool(v["passed"])
        outcomes.setdefault(v["task_id"], []).append(passed)
        if tau2 is not None:
            both += 1
            agree += bool(tau2["passed"]) == bool(v["passed"])
    if not outcomes:
        raise SubmissionError(f"{run / 'verdicts.jsonl'}: every trial was lost to an infrastructure error")
    least = min(len(o) for o in outcomes.values())
    results: dict[str, float | None] = {}
    for k in range(1, MAX_K + 1):
        mean = sum(pass_hat_k(sum(o), len(o), k) for o in outcomes.values()) / len(outcomes) if least >= k else None
        results[f"pass_{k}"] = None if mean is None else round(100 * mean, 2)
    metrics = run / "metrics.json"
    if metrics.exists():
        cost = json.loads(metrics.read_text(encoding="utf-8")).get("cost") or {}
        if cost.get("priced") and cost.get("trials"):
            results["cost"] = round(cost["total_cost"] / cost["trials"], 6)
    imported = run / "tau2_import.json"
    if imported.exists():
        rec = json.loads(imported.read_text(encoding="utf-8"))
        agreement = (
            f"our τ²-compatible reward equals the reward τ²-bench recorded on {rec.get('upstream_agreement')} of"
            f" {rec.get('upstream_rewards')} trials"
        )
    else:
        agreement = (
            f"no τ²-bench reward recorded (a run of ours); τ²-compatible reward and strict verdict agree on {agree}"
            f" of {both} trials"
        )
    return RunSummary(
        directory=str(run),
        domain=domain,
        agent=_one(run / "trajectories.jsonl", trajectories, "agent"),
        user=_one(run / "trajectories.jsonl", trajectories, "user"),
        tasks=sorted(outcomes),
        trials=sum(len(o) for o in outcomes.values()),
        results=DomainResults(**results),
        agreement=agreement,
    )


def _model_of(name: str) -> str:
    """The model a participant name carries: 'tau2:gpt-4.1' → gpt-4.1, 'tau2-llm:m@url' → m."""
    name = re.sub(r"^(tau2|tau2-llm|llm|openai|hf|vllm):", "", name)
    return name.split("@")[0].split(",")[0]


def _base_ids(domain: str) -> set[str] | None:
    from pipeline.tau2.data import Tau2DataNotFound, tau2_data_dir

    try:
        path = tau2_data_dir(domain) / "tasks.json"
    except Tau2DataNotFound:
        return None
    return {str(t["id"]) for t in json.loads(path.read_text(encoding="utf-8"))} if path.exists() else None


def tau2_version(domains: list[str]) -> str | None:
    """τ²-bench's version as the data's README files give it ('1.0.1 (a2c0247)'); None when none says."""
    from pipeline.tau2.data import Tau2DataNotFound, tau2_data_dir

    found = set()
    for d in domains:
        try:
            text = (tau2_data_dir(d) / "README.md").read_text(encoding="utf-8")
        except (Tau2DataNotFound, FileNotFoundError):
            continue
        version = re.search(r"package version ([0-9][0-9.]*[0-9])", text)
        commit = re.search(r"commit ([0-9a-f]{7,40})", text)
        if version or commit:
            found.add(" ".join(x for x in (version and version.group(1), commit and f"({commit.group(1)})") if x))
    versions = sorted(found, key=len, reverse=True)
    return versions[0] if versions else None


def build_submission(
    runs: Sequence[str | Path],
    *,
    model_name: str | None,
    model_organization: str,
    submitting_organization: str,
    contact_email: str | None = None,
    contact_name: str | None = None,
    submission_type: Literal["standard", "custom"] = "custom",
    verdict: str = "tau2",
    tau2_bench_version: str | None = None,
    today: date | None = None,
) -> tuple[Submission, list[RunSummary]]:
    if not runs:
        raise SubmissionError("no run given: one --run per domain")
    summaries = [summarize_run(r, verdict) for r in runs]
    by_domain: dict[str, RunSummary] = {}
    for s in summaries:
        if s.domain in by_domain:
            raise SubmissionError(f"{s.directory}: a second run of {s.domain} (first: {by_domain[s.domain].directory})")
        by_domain[s.domain] = s
    for field in ("agent", "user"):
        names = {getattr(s, field) for s in summaries}
        if len(names) > 1:
            listed = ", ".join(f"{s.domain}: {getattr(s, field)}" for s in summaries)
            raise SubmissionError(f"the runs use different {field}s ({listed}); the leaderboard takes one throughout")
    omitted: bool | None = False
    notes = []
    for s in summaries:
        base = _base_ids(s.domain)
        if base is None:
            omitted = None if omitted is False else omitted
        elif not base <= set(s.tasks):
            omitted = True
            notes.append(f"{s.domain}: {len(base - set(s.tasks))} of {len(base)} base tasks not run")
        notes.append(f"{s.domain}: {len(s.tasks)} tasks, {s.trials} trials; {s.agreement}")
    measure = "the τ²-compatible reward" if verdict == "tau2" else "our strict verdict (the end state and the policy)"
    run_by = (
        "Runs made with agentloop (a stateful world per domain replaying τ²-bench's data); passes counted by"
        f" {measure}; pass^k per task as C(c, k) / C(n, k), averaged over tasks; trials lost to infrastructure"
        " errors left out."
    )
    first = summaries[0]
    submission = Submission(
        model_name=model_name or _model_of(first.agent),
        model_organization=model_organization,
        submitting_organization=submitting_organization,
        submission_date=today or date.today(),
        submission_type=submission_type,
        contact_info=ContactInfo(email=contact_email, name=contact_name),
        results={s.domain: s.results for s in summaries},
        methodology=Methodology(
            evaluation_date=today or date.today(),
            tau2_bench_version=tau2_bench_version or tau2_version([s.domain for s in summaries]),
            user_simulator=_model_of(first.user),
            notes=" ".join([run_by, *(n + "." for n in notes)]),
            verification=Verification(
                modified_prompts=submission_type == "custom",
                omitted_questions=omitted,
                details="Agent and customer prompts are agentloop's own, not τ²-bench's."
                if submission_type == "custom"
                else None,
            ),
        ),
    )
    return submission, summaries


def write_submission(out: str | Path, submission: Submission) -> None:
    """The submission as JSON; unset optional fields left out, every domain's pass_1..pass_4 written (null: fewer
    trials per task than k)."""
    data = submission.model_dump(mode="json", exclude_none=True)
    for domain, results in data["results"].items():
        data["results"][domain] = {f"pass_{k}": results.get(f"pass_{k}") for k in range(1, MAX_K + 1)} | results
    atomic_write(out, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
