"""DVC stage `embedded`: build the embedded default model on CPU (its output is kept in git; see dvc.yaml)."""

from pipeline.loop.entry import run_stage
from pipeline.loop.stages import build_embedded

if __name__ == "__main__":
    run_stage("embedded", build_embedded)
