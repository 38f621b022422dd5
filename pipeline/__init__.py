"""agentloop: a measured improvement loop for tool-using customer-service agents."""

import os

# OpenMP threads that wait by sleeping, not spinning. With the default (active) policy a torch thread that reaches a
# barrier first spins on its core while the other is descheduled behind another process's work, so each of the
# thousands of small parallel regions of a training step waits a scheduler time slice: beside one busy core, SFT
# of the embedded default fell from about 5 to 0.45 steps per second (bench/bench_sft_contention.py). The runtime
# reads the variable when torch loads it, so it is set here, before any module of the package imports torch; a
# value already in the environment is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
