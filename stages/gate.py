"""DVC stage `gate`: promote or block, recomputed from trajectories."""

from pipeline.loop.entry import run_stage
from pipeline.loop.stages import gate

if __name__ == "__main__":
    run_stage("gate", gate)
