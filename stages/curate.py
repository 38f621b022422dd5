"""DVC stage `curate`: replay-verify the pool, keep middle-difficulty tasks, mix anchors and targets."""

from pipeline.loop.entry import run_stage
from pipeline.loop.stages import curate

if __name__ == "__main__":
    run_stage("curate", curate)
