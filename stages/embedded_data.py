"""DVC stage `embedded_data`: the tokenizer and encoded corpus the embedded default is trained on."""

from pipeline.loop.entry import run_stage
from pipeline.loop.stages import build_embedded_data

if __name__ == "__main__":
    run_stage("embedded_data", build_embedded_data)
