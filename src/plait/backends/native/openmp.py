"""OpenMP settings of the native libraries: how many threads a parallel loop uses, and
how waiting threads wait. Every loader of a library linking libgomp (the kernels, the
GEMM library) calls :func:`set_defaults` first: libgomp reads its settings once, when
the first such library loads it.
"""
from __future__ import annotations

import os

from plait.config import omp_num_threads, set_openmp_wait_defaults


def omp_threads() -> int:
    """How many threads an OpenMP parallel loop of a kernel uses at most here."""
    n = omp_num_threads()
    if n is not None:
        return n
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


def set_defaults() -> None:
    """Threads that spin briefly, then sleep. libgomp's default spins ~300k rounds,
    which makes every barrier cost a scheduler time slice when the cores are shared
    (measured: a 256^2 matmul at 4 GFLOP/s against 150 with passive waiting, on 2 busy
    cores; the W6 MLP step at 3.7 ms against 0.65 ms with two processes on 2 cores).
    Purely passive waiting pays a wake-up of tens of microseconds per parallel loop on
    an idle machine (W6 step 0.81 ms alone); a 2000-round spin keeps most of both
    (0.47 ms alone, 0.84-0.96 ms with two processes). libgomp reads these when the
    first library linking it loads it (the GEMM library may load before any kernel:
    its loader calls this too); a user's setting wins."""
    set_openmp_wait_defaults("PASSIVE", 2000)
