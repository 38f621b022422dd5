"""DVC stage `remeasure`: the candidate on the same held-out tasks, same protocol."""

from pipeline.loop.entry import run_stage
from pipeline.loop.stages import remeasure_candidate

if __name__ == "__main__":
    run_stage("remeasure", remeasure_candidate)
