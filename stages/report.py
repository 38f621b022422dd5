"""DVC stage `report`: the self-contained HTML report."""

from pipeline.loop.entry import run_stage
from pipeline.loop.stages import report

if __name__ == "__main__":
    run_stage("report", report)
