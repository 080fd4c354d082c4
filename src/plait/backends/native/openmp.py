"""OpenMP thread count of the native libraries' parallel loops (how waiting threads wait
is :func:`plait.config.set_openmp_wait_defaults`, called by every loader of a library
linking libgomp).
"""
from __future__ import annotations

import os

from plait.config import omp_num_threads


def omp_threads() -> int:
    """How many threads an OpenMP parallel loop of a kernel uses at most here."""
    n = omp_num_threads()
    if n is not None:
        return n
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)

