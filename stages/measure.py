"""DVC stage `measure`: the baseline on the held-out tasks, k trials each."""

from pipeline.loop.entry import run_stage
from pipeline.loop.stages import measure_baseline

if __name__ == "__main__":
    run_stage("measure", measure_baseline)
