"""Progress for long stages: a rich bar in a terminal, a log line each tenth of the work elsewhere."""

import io
import logging
import subprocess
import sys

from rich.console import Console

from pipeline.progress import track


def test_off_a_terminal_it_logs_each_tenth_with_passes_rate_and_time_left(caplog):
    caplog.set_level(logging.INFO, logger="agentloop.progress")
    with track("measure", 40, "trials", terminal=False) as progress:
        for i in range(40):
            progress.advance(passed=i % 4 == 0)
    lines = [r.getMessage() for r in caplog.records if r.name == "agentloop.progress"]
    assert len(lines) == 10, lines
    assert lines[0].startswith("measure: 4/40 trials (10%), 1 passed, ") and "left" in lines[0]
    assert lines[-1].startswith("measure: 40/40 trials (100%), 10 passed, ") and "done in" in lines[-1]


def test_a_total_learned_later_and_work_without_verdicts(caplog):
    caplog.set_level(logging.INFO, logger="agentloop.progress")
    with track("SFT", None, "steps", terminal=False) as progress:
        progress.set_total(5)
        for _ in range(5):
            progress.advance()
    lines = [r.getMessage() for r in caplog.records if r.name == "agentloop.progress"]
    assert lines[-1].startswith("SFT: 5/5 steps (100%), ") and "passed" not in lines[-1]


def test_in_a_terminal_it_draws_a_bar_with_passes():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with track("remeasure", 8, "trials", terminal=True, console=console) as progress:
        for i in range(8):
            progress.advance(passed=i < 3)
    text = out.getvalue()
    assert "remeasure" in text and "8/8" in text and "3 passed" in text and "trials/s" in text


def test_a_trainer_reports_its_steps(tmp_path, caplog):
    from types import SimpleNamespace

    from pipeline.train.progress_callback import TrackerCallback

    caplog.set_level(logging.INFO, logger="agentloop.progress")
    with track("GRPO", None, "steps", terminal=False) as progress:
        callback = TrackerCallback(progress)
        state = SimpleNamespace(max_steps=2)
        callback.on_train_begin(None, state, None)
        callback.on_step_end(None, state, None)
        callback.on_step_end(None, state, None)
    assert progress.done == 2 and progress.total == 2


def test_the_cli_off_a_terminal_prints_progress_lines(tmp_path):
    """`agentloop measure | tee` shows where it is: log lines, not a silent wait."""
    tasks = tmp_path / "tasks.jsonl"
    subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "tasks", "generate", "--world", "gen-3", "--n", "5"]
        + ["--out", str(tasks)],
        check=True,
        capture_output=True,
    )
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "measure", "--agent", "oracle", "--world", "gen-3"]
        + ["--tasks", str(tasks), "--trials", "2", "--executor", "serial", "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "measure oracle: 10/10 trials (100%), 10 passed" in done.stderr, done.stderr
