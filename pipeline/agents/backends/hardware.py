"""What this machine's CPU can do fast, read at run time: the dtype `dtype=fast` picks, and what benches record.

A CPU with AMX or AVX-512 BF16 runs bfloat16 matrix products many times faster than float32 (on one such machine,
shared, 1,336 against 85 GFLOP/s); elsewhere bfloat16 is emulated and slower. So `fast` is bfloat16 only where
the instructions are there. Nothing picks it by default: the embedded default and the committed loop stay float32,
so their outputs do not depend on the machine.
"""

from __future__ import annotations

import platform
from functools import cache
from pathlib import Path

BF16_FLAGS = ("amx_bf16", "avx512_bf16")
RECORDED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")


@cache
def cpu_info() -> dict:
    """The CPU's model and the instruction sets a timing depends on (from /proc/cpuinfo; empty elsewhere)."""
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
    return {"cpu_model": model, "cpu_flags": [f for f in RECORDED_FLAGS if f in flags]}


def fast_dtype(device: str | None) -> str:
    """bfloat16 on a GPU that has it and on a CPU with bf16 instructions; float32 anywhere else."""
    if device and device != "cpu":
        import torch

        return "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float32"
    return "bfloat16" if any(f in cpu_info()["cpu_flags"] for f in BF16_FLAGS) else "float32"
