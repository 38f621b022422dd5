"""DVC stage `baseline`: the model this iteration starts from."""

from pipeline.loop.entry import run_stage
from pipeline.loop.stages import build_baseline

if __name__ == "__main__":
    run_stage("baseline", build_baseline)
