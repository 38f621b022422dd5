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
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    except OSError:
        pass
    wanted = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")
    return {"cpu_model": model, "cpu_flags": [f for f in wanted if f in flags]}


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
