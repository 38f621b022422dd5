"""Exit 0 when the installed llama.cpp build is portable: compiled for no instruction set past AVX2 (no AVX-512,
no AMX), so it runs on every x86-64 machine CI may land on; exit 1 (saying what it found) otherwise or when it is
missing. The build's own system info is the evidence: it lists the CPU features compiled into its backend."""

from __future__ import annotations

import re
import sys

TUNED = ("AVX512", "AMX")  # present only in a build tuned to the building machine (GGML_NATIVE=ON)


def compiled_features(info: str) -> set[str]:
    """The `NAME = 1` entries of llama.cpp's system info."""
    return {name for name, on in re.findall(r"([A-Z0-9_]+) = (\d)", info) if on == "1"}


def main() -> int:
    try:
        import llama_cpp
    except ImportError:
        print("llama-cpp-python is not installed", file=sys.stderr)
        return 1
    info = llama_cpp.llama_print_system_info().decode()
    tuned = sorted(f for f in compiled_features(info) if f.startswith(TUNED))
    if tuned:
        print(
            f"llama.cpp was built for this machine's instruction set ({', '.join(tuned)}): not portable",
            file=sys.stderr,
        )
        return 1
    print(f"llama.cpp build is portable: {info.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
