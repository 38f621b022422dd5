"""DVC stage `synthesize`: targeted, verified tasks and gold trajectories from the training world."""

from pipeline.loop.entry import run_stage
from pipeline.loop.stages import synthesize

if __name__ == "__main__":
    run_stage("synthesize", synthesize)
