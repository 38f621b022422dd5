"""What went wrong first in each failed trial of a measure run: a copy slip, a garbled reply, a write the world
rejected, a refusal with nothing gone wrong before, or a write with the wrong outcome.

The failure modes (`pipeline.grading.failure_modes`) say which rule a failed trial broke; this asks what the
agent did first that the conversation shows as wrong, so that "what is left" can be read as a model problem
(copying values, keeping to the reply format) or a policy problem (refusing, writing what the world rejects).
The first of these, in message order, names the trial:

- copy slip: a tool answers that a value is not found / not a variant, or cannot parse the call's arguments;
- garbled reply: the customer answers "not sure what you mean", or the reply carries tool-call markup;
- write the world rejected: any other tool error (an order in the wrong status, a short gift card, ...);
- refused, no slip before: no write attempted and an assistant message refuses (the grader's `refuses`);
- wrote, wrong outcome: a write went through, and the end state is still not the gold one.

    python bench/embedded/bench_first_slips.py runs/baseline runs/candidate [--results bench/results/first_slips.json]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from machine import write_results

from pipeline.domains.retail.tools import WRITE_TOOLS
from pipeline.gate.load import read_trajectories
from pipeline.grading.utterances import refuses
from pipeline.rollout.trajectory import Message

ROOT = Path(__file__).resolve().parents[2]
COPY_SLIP = ("not found", "could not parse", "not a variant")
KINDS = (
    "copy slip",
    "garbled reply",
    "write the world rejected",
    "refused, no slip before",
    "wrote, wrong outcome",
    "other",
)


def first_slip(messages: list[Message]) -> str:
    for m in messages:
        text = m.content or ""
        if m.role == "tool" and any(x in text for x in COPY_SLIP):
            return "copy slip"
        if m.role == "tool" and text.startswith("Error"):
            return "write the world rejected"
        if m.role == "user" and "not sure what you mean" in text:
            return "garbled reply"
        if m.role == "assistant" and ("tool_call" in text or '"arguments"' in text):
            return "garbled reply"
    said = [m for m in messages if m.role == "assistant"]
    if any(c.name in WRITE_TOOLS for m in said for c in m.tool_calls):
        return "wrote, wrong outcome"
    if any(refuses(m.content or "") for m in said):
        return "refused, no slip before"
    return "other"


def run_slips(run: Path) -> dict:
    passed = {}
    for line in (run / "verdicts.jsonl").read_text().splitlines():
        v = json.loads(line)["verdict"]
        passed[(v["task_id"], v["trial"])] = v["passed"]
    kinds: Counter[str] = Counter()
    by_template: dict[str, Counter[str]] = {}
    for traj in read_trajectories(run)[0]:
        if passed[(traj.task_id, traj.trial)]:
            continue
        kind = first_slip(traj.messages)
        kinds[kind] += 1
        by_template.setdefault(traj.task_id.rsplit("-", 1)[-1], Counter())[kind] += 1
    return {
        "failed_trials": sum(kinds.values()),
        "first_slip": {k: kinds[k] for k in KINDS},
        "by_template": {t: dict(c.most_common()) for t, c in sorted(by_template.items())},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", type=Path, nargs="+", help="measure run directories (verdicts.jsonl, trajectories.jsonl)")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "first_slips.json")
    args = ap.parse_args()
    report = {}
    for run in args.runs:
        report[str(run)] = run_slips(run)
        print(run, report[str(run)]["failed_trials"], report[str(run)]["first_slip"])
    write_results(args.results, report)


if __name__ == "__main__":
    main()
