"""What the torch benches record about the machine they ran on, and how they write their results."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import torch


def torch_machine() -> dict:
    """Threads, cores and versions: the figures a torch bench's timings depend on."""
    return {
        "torch_threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }


def write_results(path: Path, report: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
