"""A linter for imported τ²-bench tasks: what in a task would make its score mean less than it says.

Four classes of finding, each with the task, the class and what shows it:

- gold_fails: a gold action our tools refuse when the task's set-up and gold are replayed, each on its own side (a
  look-up that finds nothing is kept apart: some tasks make the customer give a wrong id first);
- passes_empty: the reward basis already gives reward 1 to a conversation in which nothing is done (no call, no
  word): the task's checks do not tell an agent that works from one that does not (a gold that changes nothing
  under a DB-only basis, env assertions the set-up already meets, an empty basis);
- policy_tool: a tool the policy names (a snake_case name that starts with a verb, as tool names do:
  `transfer_to_human_agents`, `toggle_airplane_mode`) that the agent does not have; a tool the customer holds
  (dual control) is the customer's to use and is not a finding;
- underspecified_count: a count in a gold write (a non-zero number argument named as a count or total, or a
  `gb_amount`) whose number the scenario never states, as digits or in words: the customer cannot ask for it,
  so the agent can only guess it (or derive it, which the finding cannot tell: a person judges).

The last two are heuristics over text; each finding says what it read so a person can judge it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from pipeline.dataset import Action, Task, replay_gold
from pipeline.errors import TaskError
from pipeline.outputs import atomic_write
from pipeline.world import World

CLASSES = ("gold_fails", "passes_empty", "policy_tool", "underspecified_count")
_VERBS = (
    "get|find|list|search|book|cancel|update|modify|return|exchange|transfer|send|calculate|think|toggle|enable"
    "|disable|suspend|resume|refuel|check|reset|set|reboot|grant|make|run|can|connect|disconnect|reseat|pay|refund"
    "|add|remove|apply|create|delete|verify|lookup|request|issue|upgrade|downgrade|change|activate|deactivate|block"
    "|unblock|reactivate|schedule|open|close|process|submit|file|report|escalate|notify|charge|credit|waive|upload"
)
_TOOLISH = re.compile(rf"\b((?:{_VERBS})_[a-z0-9]+(?:_[a-z0-9]+)*)\b")
_COUNT_ARG = re.compile(r"(count|quantity|^total_|^nonfree_|^num_|_number$|^gb_amount$)")
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]


@dataclass(frozen=True)
class Finding:
    task_id: str | None  # None: a finding about the domain (its policy), not one task
    kind: str
    detail: str


def _scenario_text(task: Task) -> str:
    s = task.user_script
    parts = [s.goal, s.instructions or ""]
    if s.scenario is not None:
        parts += [v for v in s.scenario.model_dump().values() if isinstance(v, str)]
    return " ".join(parts).lower()


def _says_number(text: str, n: float) -> bool:
    if n != int(n):
        return bool(re.search(rf"(?<![\d.]){re.escape(repr(n))}(?![\d])", text))
    k = int(n)
    forms = [rf"(?<![\d.]){k}(?:\.0+)?(?![\d])"]
    if 0 <= k < len(WORDS):
        forms.append(rf"\b{WORDS[k]}\b")
    return any(re.search(f, text) for f in forms)


def gold_fails(world: World, task: Task) -> list[Finding]:
    out = []
    for e in replay_gold(world, task).log:
        if e.ok or (e.kind in ("read", "identity") and e.error_category == "not_found"):
            continue
        side = "" if e.requestor == "assistant" else f" ({e.requestor}'s side)"
        out.append(Finding(task.id, "gold_fails", f"{e.name}{side} refused: {e.error}"))
    return out


def passes_empty(world: World, task: Task) -> list[Finding]:
    from pipeline.grading import tau2_reward
    from pipeline.rollout import Trajectory

    empty = Trajectory(
        task_id=task.id, agent="nothing", user="nothing", world=world.name, domain=world.domain.name,
        termination="user_stop",
    )  # fmt: skip
    try:
        result = tau2_reward(world, task, empty)
    except TaskError as exc:
        return [Finding(task.id, "passes_empty", f"not evaluated: {exc}")] if "basis" in str(exc) else []
    if not result.passed:
        return []
    basis = ", ".join(result.basis) or "empty"
    unjudged = f"; {', '.join(result.unjudged)} not judged" if result.unjudged else ""
    return [Finding(task.id, "passes_empty", f"reward 1 with nothing done (basis: {basis}{unjudged})")]


def policy_names(world: World) -> Counter:
    """The tool-like names the policy writes (`name` or name(...)), with how often."""
    return Counter(_TOOLISH.findall(world.policy or ""))


def policy_tools(world: World) -> list[Finding]:
    named = policy_names(world)
    agent = set(world.tools.tools)
    customer = set(world.user_tools.tools) if world.user_tools is not None else set()
    return [
        Finding(None, "policy_tool", f"the policy names {name} ({n}x); the agent has no such tool")
        for name, n in sorted(named.items())
        if name not in agent and name not in customer
    ]


def _count_values(a: Action) -> list[tuple[str, float]]:
    out = []
    for key, value in a.arguments.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) and value != 0 and _COUNT_ARG.search(key):
            out.append((key, float(value)))
    return out


def underspecified_counts(world: World, task: Task) -> list[Finding]:
    text = _scenario_text(task)
    out = []
    for a in task.gold_actions:
        if world.tools.tools.get(a.name) is None or world.tools.tools[a.name].kind != "write":
            continue
        for key, n in _count_values(a):
            if not _says_number(text, n):
                shown = int(n) if n == int(n) else n
                out.append(Finding(task.id, "underspecified_count", f"{a.name} {key}={shown}: not in the scenario"))
    return out


def lint(world: World, tasks: list[Task]) -> list[Finding]:
    """Every finding over a domain's tasks: per task in file order, then the policy's."""
    out: list[Finding] = []
    for task in tasks:
        out += gold_fails(world, task) + passes_empty(world, task) + underspecified_counts(world, task)
    return out + policy_tools(world)


def summary(findings: list[Finding], tasks: int) -> dict:
    """Counts per class (findings, and tasks with at least one), with up to three examples each."""
    out: dict = {"tasks": tasks, "classes": {}}
    for kind in CLASSES:
        of = [f for f in findings if f.kind == kind]
        out["classes"][kind] = {
            "findings": len(of),
            "tasks": len({f.task_id for f in of if f.task_id is not None}),
            "examples": [asdict(f) for f in of[:3]],
        }
    return out


def lint_directory(path: str | Path, split: str | None = None, domain: str | None = None) -> tuple[dict, list[Finding]]:
    """Lint a τ²-bench domain directory's tasks (or one split): its summary and every finding."""
    from pipeline.tau2.importer import read_splits, select_split
    from pipeline.world import checked_world, domain_of_directory, resolve_domain

    path = Path(path)
    d = resolve_domain(domain) if domain else domain_of_directory(path)
    world, tasks = d.require("tau2_importer", needed_for="agentloop tasks lint").load(path)
    checked_world(world, path)
    tasks = select_split(tasks, read_splits(path), split, path)
    findings = lint(world, tasks)
    named = policy_names(world)
    read = {
        "policy_names": len(named),
        "agent_tools_named": len(set(named) & set(world.tools.tools)),
        "customer_tools_named": len(set(named) & set(world.user_tools.tools if world.user_tools else ())),
    }
    report = {"domain": d.name, "directory": str(path), "split": split, **read, **summary(findings, len(tasks))}
    return report, findings


def write_findings(out: str | Path, report: dict, findings: list[Finding]) -> None:
    atomic_write(out, json.dumps({**report, "findings": [asdict(f) for f in findings]}, indent=2) + "\n")
