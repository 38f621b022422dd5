"""What the benches record about the machine they ran on, and how they write their results."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path


def torch_machine() -> dict:
    """Threads, cores and versions: the figures a torch bench's timings depend on."""
    import torch  # only the torch benches pay for it

    return {
        "torch_threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }


def cpu() -> dict:
    """The CPU's model and the instruction sets a timing depends on (AVX-512, AMX), from /proc/cpuinfo."""
    from pipeline.agents.backends.hardware import cpu_info

    return cpu_info()


def host_machine(load: tuple[float, float, float]) -> dict:
    """Python, cores, the CPU, platform and the load average when the bench started (`os.getloadavg()`)."""
    return {
        **cpu(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "load_average_at_start": [round(x, 2) for x in load],
    }


def write_results(path: Path, report: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
