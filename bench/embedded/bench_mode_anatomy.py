"""Where a measure run's failure modes sit: by template, and what the invented values are.

The train issue's bar asks SFT to cut every targeted mode's task rate by two thirds. A mode's task rate counts
every task with at least one trial failing that way, so a template no trial ever passes keeps its tasks in the
rate whatever the data teaches. This bench shows, per template, how many tasks carry each mode, and splits the
invention evidence (values in a write or a reply that appear in no earlier user message or tool output) by
what the value is:

- copy slip: a value shown earlier, copied with up to two characters off, or run on past its end into the text
  that followed it (`#W0302539. The Skateboard`), or cut short;
- spliced copy: a value of 8 or more characters made of at most three pieces of 4 or more characters, each
  shown earlier (the copy jumping between two ids mid-value);
- degenerate: a run of 20 or more digits, or one character repeated 8 or more times (the decoder looping);
- made up: anything else (a plausible id or value that nothing showed: the planted invention, or a variant id
  chosen from nowhere).

Plan adherence is split the same way: an affirmed confirmation followed by a call that names a write tool but
whose arguments do not parse (the decoder ran on past a value) is counted by the rules as "no write attempted";
the bench counts those findings apart as garbled writes.

It also reports the floor: the task share each mode keeps on templates where no task passed all its trials.

    python bench/embedded/bench_mode_anatomy.py runs/baseline runs/candidate [--results bench/results/mode_anatomy.json]
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from machine import write_results

from pipeline.domains.retail.tools import WRITE_TOOLS
from pipeline.gate.load import read_trajectories
from pipeline.grading.evidence import normalize
from pipeline.grading.failure_modes import FAILURE_MODES
from pipeline.rollout.trajectory import Message

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("copy slip", "spliced copy", "degenerate", "made up")
_TOKEN = re.compile(r"[#\w@.\-]+")
_DEGENERATE = re.compile(r"\d{20,}|(.)\1{7,}")


def edit_distance(a: str, b: str, cap: int) -> int:
    """Levenshtein distance, or cap + 1 once it is certain to exceed cap."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def spliced(value: str, shown_text: str, min_piece: int = 4, max_pieces: int = 3) -> bool:
    """Whether `value` is at most `max_pieces` substrings of `shown_text`, each at least `min_piece` long
    (greedy longest piece first, which finds a cover with the fewest pieces when one exists)."""
    if len(value) < 8:
        return False
    i, pieces = 0, 0
    while i < len(value):
        n = len(value) - i
        while n >= min_piece and value[i : i + n] not in shown_text:
            n -= 1
        if n < min_piece:
            return False
        i, pieces = i + n, pieces + 1
    return pieces <= max_pieces


def value_kind(value: str, shown: set[str]) -> str:
    """One of `KINDS` for an ungrounded value, given the tokens shown before it."""
    v = normalize(value).lstrip("#$").strip(" .,")
    if _DEGENERATE.search(v):
        return "degenerate"
    for token in shown:
        t = token.lstrip("#").strip(".,")
        if len(t) < 4 or t == v:
            continue
        if v.startswith(t) or (len(v) >= 4 and t.startswith(v)) or (len(t) >= 5 and edit_distance(v, t, 2) <= 2):
            return "copy slip"
    if spliced(v, " ".join(shown)):
        return "spliced copy"
    return "made up"


def evidence_at(line: str) -> tuple[int, str]:
    """The message index and the text of one evidence line ('message N: text', as the failure analysis writes)."""
    pos, text = line.split(": ", 1)
    return int(pos.removeprefix("message ")), text


def invented_values(text: str) -> list[str]:
    """The values named by one invention finding (a write's 'name=value' list or a reply's 'states ...')."""
    if text.startswith("states "):
        return [v for v in text[len("states ") :].split(": in no")[0].split(", ") if v]
    found = re.findall(r"=(\[.*?\]|[^,]+?)(?=, \w+=|\s+appear)", text)
    return [x.strip(" '") for f in found for x in f.strip("[]").split(",") if x.strip(" '")]


def garbled_write_after(messages: list[Message], pos: int) -> bool:
    """Whether the agent's next call after the customer's answer to message `pos` (before the customer speaks
    again) names a write tool and has arguments that did not parse."""
    for m in messages[pos + 2 :]:
        if m.role == "user":
            return False
        if m.role == "assistant" and m.tool_calls:
            call = m.tool_calls[0]
            return call.arguments is None and call.name in WRITE_TOOLS
    return False


def anatomy(run: Path) -> dict:
    analyses = {}
    for line in (run / "verdicts.jsonl").read_text().splitlines():
        row = json.loads(line)
        analyses[(row["verdict"]["task_id"], row["verdict"]["trial"])] = row
    tasks_by_template: dict[str, set[str]] = defaultdict(set)
    failed_tasks: set[str] = set()
    mode_tasks: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    values: Counter[str] = Counter()
    value_tasks: dict[str, set[str]] = defaultdict(set)
    template_values: dict[str, Counter[str]] = defaultdict(Counter)
    plan: Counter[str] = Counter()
    plan_tasks: dict[str, set[str]] = defaultdict(set)
    for traj in read_trajectories(run)[0]:
        template = traj.task_id.rsplit("-", 1)[-1]
        tasks_by_template[template].add(traj.task_id)
        row = analyses[(traj.task_id, traj.trial)]
        if row["verdict"]["passed"]:
            continue
        failed_tasks.add(traj.task_id)
        if not row["analysis"]:
            continue
        for mode in row["analysis"]["modes"]:
            mode_tasks[template][mode].add(traj.task_id)
        for line in row["analysis"]["evidence"].get("plan_adherence", []):
            pos, _ = evidence_at(line)
            kind = "garbled write" if garbled_write_after(traj.messages, pos) else "other"
            plan[kind] += 1
            plan_tasks[kind].add(traj.task_id)
        for line in row["analysis"]["evidence"].get("invention", []):
            pos, text = evidence_at(line)
            shown = {
                tok
                for m in traj.messages[:pos]
                if m.role == "user" or (m.role == "tool" and not m.error)
                for tok in _TOKEN.findall(normalize(m.content or ""))
            }
            for value in invented_values(text):
                kind = value_kind(value, shown)
                values[kind] += 1
                template_values[template][kind] += 1
                value_tasks[kind].add(traj.task_id)
    n = sum(len(t) for t in tasks_by_template.values())
    never = [t for t, ids in tasks_by_template.items() if ids <= failed_tasks]
    by_template = {
        t: {"tasks": len(ids), "all_trials_pass": len(ids - failed_tasks)}
        | {m: len(mode_tasks[t][m]) for m in FAILURE_MODES}
        | {"invention_values": {k: template_values[t][k] for k in KINDS}}
        for t, ids in sorted(tasks_by_template.items())
    }
    rates = {m: sum(r[m] for r in by_template.values()) / n for m in FAILURE_MODES}
    floor = {m: sum(by_template[t][m] for t in never) / n for m in FAILURE_MODES}
    return {
        "tasks": n,
        "mode_task_rates": rates,
        "templates_never_all_pass": sorted(never),
        "floor_from_those_templates": floor,
        "invention_values": {k: values[k] for k in KINDS},
        "invention_tasks_with_value_kind": {k: len(value_tasks[k]) for k in KINDS},
        "plan_adherence_findings": dict(plan),
        "plan_adherence_tasks_only_garbled_writes": len(plan_tasks["garbled write"] - plan_tasks["other"]),
        "by_template": by_template,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", type=Path, nargs="+", help="measure run directories (verdicts.jsonl, trajectories.jsonl)")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "mode_anatomy.json")
    args = ap.parse_args()
    report = {str(run): anatomy(run) for run in args.runs}
    for run, r in report.items():
        print(run, {m: round(v, 3) for m, v in r["mode_task_rates"].items()}, "never:", r["templates_never_all_pass"])
        print("  floor", {m: round(v, 3) for m, v in r["floor_from_those_templates"].items()})
        print("  invention values", r["invention_values"], "tasks", r["invention_tasks_with_value_kind"])
        print("  plan adherence", r["plan_adherence_findings"], r["plan_adherence_tasks_only_garbled_writes"])
    write_results(args.results, report)


if __name__ == "__main__":
    main()
