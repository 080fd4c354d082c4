"""The machine's peak numbers the profiler's summary compares kernels with.

Arithmetic peak is estimated from the CPU's facts: cores x clock x SIMD lanes x 2 (a
fused multiply-add) x 2 (two FMA units, as on current x86 and Arm server cores; one
without FMA). Memory bandwidth is measured once per process: the best of a few copies
of a 64 MiB buffer (bytes read plus bytes written per second).
"""
from __future__ import annotations

import functools
import time

import numpy as np


def _clock_hz() -> float:
    for path, scale in (("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", 1e3),):
        try:
            with open(path) as f:
                return float(f.read().strip()) * scale
        except (OSError, ValueError):
            pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("cpu mhz"):
                    return float(line.split(":", 1)[1]) * 1e6
    except (OSError, ValueError):
        pass
    return 2.5e9                       # unknown: a typical server clock


@functools.lru_cache(maxsize=None)
def peak_flops(itemsize: int = 4) -> float:
    """Estimated peak floating-point operations per second for ``itemsize``-byte floats."""
    from plait.runtime.cpuinfo import cpu_info
    info = cpu_info()
    lanes = max(info.simd_bytes // itemsize, 1)
    fma = 4 if "fma" in info.flags or info.machine in ("aarch64", "arm64") else 1
    return info.cores * _clock_hz() * lanes * fma


@functools.lru_cache(maxsize=None)
def peak_bytes_per_s() -> float:
    """Measured memory bandwidth (bytes per second), the best of five 64 MiB copies."""
    src = np.ones(8 << 20)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return 2 * src.nbytes / best
