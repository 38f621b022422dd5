"""DVC stage `train`: SFT of the baseline on the curated, targeted data."""

from pipeline.loop.entry import run_stage
from pipeline.loop.stages import train_candidate

if __name__ == "__main__":
    run_stage("train", train_candidate)
