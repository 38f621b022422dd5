"""τ²-bench gold-equivalent conversations under our verdicts, and the confirmation reading on its corpus.

For every task of a τ²-bench domain directory, the conversation a correct agent and a cooperative customer
would have (`pipeline.tau2.gold`), with the customer answering each confirmation request in natural words, is
graded by the strict verdict: once with the old keyword list (a reply opening with one of 18 words) standing in
for the confirmation reading, once with the reading itself. Two answer sets: the issue's single reply
("Sounds good, please do that.") for every confirmation, and a mix of ten natural replies. When the
τ²-compatible reward is available it is computed too. Failures are listed with their failed components.

    python bench/bench_tau2_gold.py --domain ../shared/tau2_retail [--results bench/results/tau2_gold.json]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path

from machine import write_results

import pipeline.grading.static_checks as static_checks
from pipeline.domains.retail.worlds import load_tau2_domain
from pipeline.grading.confirmation import Reading, read_reply
from pipeline.grading.grader import grade
from pipeline.tau2.data import tau2_data_dir
from pipeline.tau2.gold import gold_conversation

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ("confirmation_replies.jsonl", "confirmation_holdout.jsonl")
ISSUE_REPLY = ("Sounds good, please do that.",)
NATURAL = (
    "Sounds good, please do that.",
    "Yes, please go ahead.",
    "That works for me, go ahead.",
    "Perfect, please proceed.",
    "Absolutely, go ahead.",
    "Yes please, that's correct.",
    "Great, let's do it.",
    "That all looks right - please go ahead.",
    "Yes, I confirm.",
    "Okay, sounds good.",
)
# The rule the reading replaced: a reply opening with one of these words, and no leading negation.
OLD_WORDS = (
    "yes",
    "yeah",
    "yep",
    "yup",
    "sure",
    "ok",
    "okay",
    "confirmed",
    "i confirm",
    "confirm",
    "correct",
    "that's right",
    "that is right",
    "go ahead",
    "please go ahead",
    "please proceed",
    "please do",
    "proceed",
)
_OLD = re.compile(r"^\W*(" + "|".join(re.escape(a) for a in OLD_WORDS) + r")\b", re.IGNORECASE)
_OLD_NEG = re.compile(r"^\W*(no|nope|not|don't|do not|wait|hold on)\b", re.IGNORECASE)


def old_reading(text: str | None, question: str | None = None) -> Reading:
    yes = bool(text) and bool(_OLD.search(text)) and not _OLD_NEG.search(text)
    return Reading("yes" if yes else "no", "keyword list")


def grade_all(domain, replies, reading) -> dict:
    static_checks.read_reply = reading
    try:
        failed: dict[str, list[str]] = {}
        for task in domain.tasks:
            verdict = grade(domain.world, task, gold_conversation(domain.world, task, replies))
            if not verdict.passed:
                failed[task.id] = verdict.failed_components
    finally:
        static_checks.read_reply = read_reply
    return {
        "passed": len(domain.tasks) - len(failed),
        "tasks": len(domain.tasks),
        "failed_components": dict(Counter(c for cs in failed.values() for c in cs)),
        "failed": failed,
    }


def corpus_scores() -> dict:
    out = {}
    for name in CORPORA:
        rows = [json.loads(x) for x in (ROOT / "tests" / "data" / name).read_text().splitlines() if x.strip()]
        said = [(read_reply(r["reply"]).confirmed, r["affirms"]) for r in rows]
        tp = sum(p and t for p, t in said)
        out[name] = {
            "replies": len(rows),
            "affirmations": sum(t for _, t in said),
            "precision": tp / max(1, sum(p for p, _ in said)),
            "recall": tp / max(1, sum(t for _, t in said)),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--domain", type=Path, default=None, help="Default: τ²-bench retail (pipeline.tau2.data).")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "tau2_gold.json")
    args = ap.parse_args()
    args.domain = args.domain or tau2_data_dir("retail")
    t0 = time.perf_counter()
    domain = load_tau2_domain(args.domain)
    report: dict = {"domain": str(args.domain), "corpus": corpus_scores(), "strict": {}}
    for label, replies in (("issue_reply", ISSUE_REPLY), ("natural_mix", NATURAL)):
        for rule, reading in (("keyword_list", old_reading), ("reading", read_reply)):
            r = grade_all(domain, replies, reading)
            report["strict"][f"{label}/{rule}"] = r
            print(
                f"strict {label:12s} {rule:12s} {r['passed']}/{r['tasks']} pass; failing components",
                r["failed_components"],
            )
    report["wall_s"] = time.perf_counter() - t0
    print("corpus", json.dumps(report["corpus"]))
    write_results(args.results, report)


if __name__ == "__main__":
    main()
