"""`agentloop export tau2-submission`: our runs as the `submission.json` τ²-bench's leaderboard takes.

The leaderboard's format (τ²-bench's submission guide and its submission schema): who made the model and who
ran it, a contact, and per domain (retail, airline, telecom) pass^1 … pass^4 as percentages (null where the run
has fewer trials per task than k), optionally the average cost of a trajectory; a methodology (evaluation date,
τ²-bench version, the user simulator's model, notes, and a verification block: prompts modified, tasks omitted).

Each run directory is one domain's (`agentloop measure` or `agentloop import tau2-run`): its domain and
participants are read from trajectories.jsonl, its outcomes from verdicts.jsonl (each verdict must grade the
trajectory on its line: the same task, trial and end state) — by default the τ²-compatible
reward, the leaderboard's measure (pass^k per task as C(c, k) / C(n, k), the mean over tasks; trials lost to an
infrastructure error are left out, as τ²-bench leaves them out). The notes say, per domain, how far our reward
agrees with τ²-bench's: with the reward τ²-bench recorded, trial by trial, for an imported run; for a run of
ours, how often the τ²-compatible reward and our strict verdict agree. Every run must use the same agent and the
same user simulator, as the leaderboard requires; tasks missing from a domain's base set mark the submission
`omitted_questions`.

What a run claims is checked against what it records (`check_world`, `recorded_model`): the world it was measured
in (provenance.json of measure, tau2_import.json of an import) must be τ²-bench's world of the domain it is
exported as, digest for digest (a generated world, another domain's data or an edited db.json is refused), and the
model name is the one the agent's own settings record (an endpoint's model, the LLM a τ²-bench run names), never
read off an agent's label; an agent that records none (a local checkpoint, a scripted agent) needs --model-name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

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


class _Tau2Pass(BaseModel):
    passed: bool


class _VerdictRow(BaseModel):
    """What the export reads of a verdict (the rest of the record is left as it is)."""

    task_id: str
    trial: int = 0
    passed: bool
    infra_error: bool = False
    tau2: _Tau2Pass | None = None
    final_hash: str = ""


class _TrajectoryRow(BaseModel):
    task_id: str
    trial: int = 0
    domain: str
    agent: str
    user: str
    final_hash: str = ""


def _lines(path: Path) -> list[dict]:
    if not path.exists():
        raise SubmissionError(f"{path}: file not found (a run directory of agentloop measure or import tau2-run)")
    out = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SubmissionError(f"{path}: not readable as UTF-8 text: {exc}") from None
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                row = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:
                raise SubmissionError(f"{path}: line {n}: invalid JSON: {getattr(exc, 'msg', exc)}") from None
            if not isinstance(row, dict):
                raise SubmissionError(f"{path}: line {n}: expected a JSON object")
            out.append(row)
    if not out:
        raise SubmissionError(f"{path}: no trials")
    return out


def _rows(path: Path, rows: list[dict], model: type[BaseModel], prefix: str = "") -> list[dict]:
    """`rows` checked for the fields the export reads; an error names the line and the field."""
    out = []
    for n, row in enumerate(rows, start=1):
        try:
            out.append(model.model_validate(row).model_dump())
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(map(str, err["loc"]))
            raise SubmissionError(f"{path}: line {n}: field {prefix}{field}: {err['msg']}") from None
    return out


def _one(path: Path, rows: list[dict], field: str) -> str:
    values = sorted({str(r.get(field)) for r in rows})
    if len(values) != 1:
        raise SubmissionError(f"{path}: field {field}: the trials name several ({', '.join(values)}); one per run")
    return values[0]


def _verdicts_grade(run: Path, trajectories: list[dict], verdicts: list[dict]) -> None:
    """Each verdict must be the one of the trajectory on its line: the same task and trial, and (where both record
    it) the same end state; verdicts of another run (another domain's) are refused, naming the line and field."""
    for n, (t, v) in enumerate(zip(trajectories, verdicts, strict=True), start=1):
        for field in ("task_id", "trial"):
            if str(t.get(field)) != str(v.get(field)):
                raise SubmissionError(
                    f"{run / 'verdicts.jsonl'}: line {n}: field verdict.{field}: {v.get(field)!r}, but trajectory"
                    f" {n} is {t.get(field)!r} (verdicts of another run)"
                )
        if t.get("final_hash") and v.get("final_hash") and t["final_hash"] != v["final_hash"]:
            raise SubmissionError(
                f"{run / 'verdicts.jsonl'}: line {n}: field verdict.final_hash: not the end state of trajectory {n}"
                f" ({str(v['final_hash'])[:16]!r} vs {str(t['final_hash'])[:16]!r}; verdicts of another run)"
            )


def summarize_run(run: str | Path, verdict: str = "tau2") -> RunSummary:
    """One run directory's domain, participants, pass^1..4 and how far our reward agrees with τ²-bench's."""
    run = Path(run)
    trajectories = _rows(run / "trajectories.jsonl", _lines(run / "trajectories.jsonl"), _TrajectoryRow)
    rows = _lines(run / "verdicts.jsonl")
    for n, row in enumerate(rows, start=1):
        if not isinstance(row.get("verdict"), dict):
            raise SubmissionError(f"{run / 'verdicts.jsonl'}: line {n}: field verdict: expected an object")
    verdicts = _rows(run / "verdicts.jsonl", [row["verdict"] for row in rows], _VerdictRow, "verdict.")
    if len(verdicts) != len(trajectories):
        raise SubmissionError(f"{run}: {len(trajectories)} trajectories but {len(verdicts)} verdicts")
    domain = _one(run / "trajectories.jsonl", trajectories, "domain")
    if domain not in DOMAINS:
        raise SubmissionError(f"{run / 'trajectories.jsonl'}: field domain: {domain!r} is not one of {DOMAINS}")
    _verdicts_grade(run, trajectories, verdicts)
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
        passed = bool(tau2["passed"]) if verdict == "tau2" and tau2 is not None else bool(v["passed"])
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
        cost = _json(metrics).get("cost") or {}
        cost = cost if isinstance(cost, dict) else {}
        total, trials = cost.get("total_cost"), cost.get("trials")
        if cost.get("priced") and isinstance(total, (int, float)) and isinstance(trials, int) and trials > 0:
            results["cost"] = round(total / trials, 6)
    imported = run / "tau2_import.json"
    if imported.exists():
        rec = _json(imported)
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
    """The model a participant name carries: 'tau2:gpt-4.1' → gpt-4.1, 'tau2-llm:m@url' → m (a description of
    the customer; the agent's model name is read from its settings, `recorded_model`)."""
    name = re.sub(r"^(tau2|tau2-llm|llm|openai|hf|vllm):", "", name)
    return name.split("@")[0].split(",")[0]


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SubmissionError(f"{path}: not readable JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SubmissionError(f"{path}: expected a JSON object")
    return data


MODEL_KINDS = ("openai", "program", "a2a")
"""Agents whose settings name the model they call (an endpoint's model); an hf/vllm checkpoint is named by its
folder and a scripted agent by its planted rates, neither a model name."""


def recorded_model(run: str | Path, role: str = "agent") -> str | None:
    """The model `role` (agent or user) called in a run, as its settings record it: usage.json's
    `ROLE.settings.model` for an agent of an endpoint, tau2_import.json's `agent_model` for an imported run; None
    when it records none."""
    run = Path(run)
    imported = run / "tau2_import.json"
    if imported.exists():
        model = _json(imported).get(f"{role}_model")
        return model if isinstance(model, str) and model.strip() else None
    usage = run / "usage.json"
    if not usage.exists():
        return None
    settings = (_json(usage).get(role) or {}).get("settings") or {}
    model = settings.get("model") if isinstance(settings, dict) else None
    if role == "agent" and settings.get("kind") not in MODEL_KINDS:
        return None
    return model if isinstance(model, str) and model.strip() else None


def recorded_world(run: str | Path) -> tuple[str, str, str]:
    """(domain, world, world digest) a run records it was measured in: provenance.json of measure (when it describes
    the run's trajectories), tau2_import.json of import tau2-run."""
    from pipeline.dataset.provenance import describing

    run = Path(run)
    imported = run / "tau2_import.json"
    if imported.exists():
        rec = _json(imported)
        fields = [rec.get("domain_name"), rec.get("world"), rec.get("world_digest")]
        if all(isinstance(f, str) and f for f in fields):
            return str(fields[0]), str(fields[1]), str(fields[2])
        raise SubmissionError(
            f"{imported}: field world_digest: not recorded (imported before imports recorded their world); import"
            " the results file again"
        )
    recorded = describing(run)
    if recorded is None:
        raise SubmissionError(
            f"{run}: no record of the world it was measured in (provenance.json, written by agentloop measure,"
            " missing or describing other trajectories); measure it again"
        )
    return recorded.domain, recorded.world, recorded.world_digest


def check_world(summary: RunSummary) -> None:
    """Refuse a run not measured in τ²-bench's world of the domain it is exported as."""
    from pipeline.tau2.data import tau2_data_dir
    from pipeline.world import load_world

    domain, world, digest = recorded_world(summary.directory)
    where = Path(summary.directory)
    if domain != summary.domain:
        raise SubmissionError(
            f"{where}: field domain: measured in domain {domain!r}, but its trajectories say {summary.domain!r}"
        )
    try:
        reference = load_world(str(tau2_data_dir(domain)))
    except InputError as exc:
        raise SubmissionError(f"{where}: cannot check that it ran in τ²-bench's {domain} world: {exc}") from None
    if digest != reference.fingerprint:
        raise SubmissionError(
            f"{where}: field world: measured in world {world!r} ({digest[:16]}), not τ²-bench's {domain} world"
            f" ({reference.fingerprint[:16]}, {reference.directory or tau2_data_dir(domain)}); only a run in"
            " τ²-bench's world is its result"
        )


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
    day = today or date.today()
    Submission(  # the fields given are checked before any run is read
        model_name=model_name or "-",
        model_organization=model_organization,
        submitting_organization=submitting_organization,
        submission_date=day,
        contact_info=ContactInfo(email=contact_email, name=contact_name),
        results={},
    )
    summaries = [summarize_run(r, verdict) for r in runs]
    for summary in summaries:
        check_world(summary)
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
    models = {recorded_model(s.directory) for s in summaries}
    if model_name is None:
        recorded = sorted(m for m in models if m is not None)
        if len(recorded) != 1 or None in models:
            why = (
                f"the runs record different models ({', '.join(recorded)})"
                if len(recorded) > 1
                else f"the agent {first.agent!r} records no model name (a local checkpoint or a scripted agent)"
            )
            raise SubmissionError(f"--model-name: {why}; give the model's name")
        model_name = recorded[0]
    user_model = recorded_model(first.directory, "user")
    submission = Submission(
        model_name=model_name,
        model_organization=model_organization,
        submitting_organization=submitting_organization,
        submission_date=day,
        submission_type=submission_type,
        contact_info=ContactInfo(email=contact_email, name=contact_name),
        results={s.domain: s.results for s in summaries},
        methodology=Methodology(
            evaluation_date=day,
            tau2_bench_version=tau2_bench_version or tau2_version([s.domain for s in summaries]),
            user_simulator=user_model or _model_of(first.user),
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
