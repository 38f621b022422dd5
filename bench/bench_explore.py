"""What exploring by execution learns of a domain, and how much of it generic tasks cover.

Per domain (named as for `--domain`; `<domain>+generic` switches a domain's own kit off): the time to build the
world model, the write tools explored and unexplored, the refusal groups found and those a precondition explains,
and the coverage of `--tasks` generic held-out tasks (write tools carried out, refusal groups asked for; the tasks
the top-up put in for a gap, each replacing a task of the draw, and the gaps it could not fill, with why).
Written to bench/results/explore.json.

    python bench/bench_explore.py [--tasks 120] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pipeline.authoring.templates import generate, generate_tasks
from pipeline.explore.coverage import coverage
from pipeline.explore.probe import explore
from pipeline.tau2.data import tau2_data_dir
from pipeline.world.registry import load_world

ROOT = Path(__file__).resolve().parents[1]
DOMAINS = {
    "airline+generic": str(tau2_data_dir("airline")),
    "retail+generic": "gen-0",
    "tests.domains.toy.domain:TOY+generic": "gen-0",
    "tests.domains.library.domain:LIBRARY": "library",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "explore.json")
    args = parser.parse_args()
    results = {}
    for spec, ref in DOMAINS.items():
        world = load_world(ref, spec)
        t0 = time.perf_counter()
        model = explore(world, seed=args.seed)
        explore_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        made = world.domain.require("tasks")
        if made is generate_tasks:  # the generic path: with what its top-up replaced and could not reproduce
            result = generate(world, args.tasks, seed=args.seed)
            tasks, unreproduced = result.tasks, result.unreproduced
        else:
            tasks, unreproduced = made(world, args.tasks, seed=args.seed), {}
        generate_s = time.perf_counter() - t1
        groups = [g for w in model.writes.values() for g in w.refusals]
        results[spec] = {
            "world": world.name,
            "explore_s": round(explore_s, 2),
            "writes": len(model.writes),
            "unexplored": model.unexplored,
            "refusal_groups": len(groups),
            "explained": sum(g.precondition is not None for g in groups),
            "tasks": len(tasks),
            "generate_s": round(generate_s, 2),
            "coverage": coverage(model, tasks, unreproduced),
        }
        c = results[spec]["coverage"]
        print(f"{spec}: explored in {explore_s:.1f} s; {len(groups)} refusal groups, "
              f"{results[spec]['explained']} explained; {len(tasks)} tasks in {generate_s:.1f} s cover writes "
              f"{c['writes_covered']}, refusal groups {c['refusals_covered']}; {len(c['top_up'])} replaced by a "
              f"top-up, unreproduced {c['unreproduced']}")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
