"""DVC stage `target`: split the synthesis budget across the measured failure modes; record the cells they failed in."""

from pipeline.loop.entry import run_stage
from pipeline.loop.stages import make_targets

if __name__ == "__main__":
    run_stage("target", make_targets)
