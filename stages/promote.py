"""DVC stage `promote`: log the iteration to MLflow, register the candidate, move `champion` only if the gate passed."""

from pipeline.loop.entry import run_stage
from pipeline.loop.track import track_and_promote

if __name__ == "__main__":
    run_stage("promote", track_and_promote)
