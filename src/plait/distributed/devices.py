"""CPU devices: the machine's cores split into groups, one replica per group.

``plait.config.cpu_devices`` (``PLAIT_CPU_DEVICES``) sets how many devices each
process has. Device ``k`` of a process owns cores ``k::n`` of the process's
affinity set (or shares cores round-robin when there are more devices than cores).
Global device ids run over processes: process ``p`` owns ids ``p*L .. p*L+L-1``
(``L`` local devices each), as ``jax.devices()`` lists them.

A replica thread allocates from its own glibc malloc arena, whose heaps glibc unmaps
when they empty; ``plait.runtime.heap.keep_heaps`` makes them stay (see there).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from dataclasses import dataclass

from plait.config import config, set_openmp_wait_defaults


@dataclass(frozen=True)
class CpuDevice:
    """One CPU device: its global id, owning process and the cores its replica uses."""

    id: int
    process_index: int
    cores: tuple[int, ...]
    platform: str = "cpu"

    def __repr__(self):
        return f"CpuDevice(id={self.id}, process_index={self.process_index}, cores={self.cores})"


def _all_cores() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def split_cores(cores, count: int) -> list[tuple[int, ...]]:
    """``count`` groups of ``cores``: ``cores[k::count]``, or one shared core each
    (round-robin) when there are fewer cores than groups."""
    cores = list(cores)
    if count <= len(cores):
        return [tuple(cores[k::count]) for k in range(count)]
    return [(cores[k % len(cores)],) for k in range(count)]


def make_devices(count: int, process_index: int = 0) -> list[CpuDevice]:
    """``count`` devices over this process's cores."""
    return [CpuDevice(process_index * count + k, process_index, g)
            for k, g in enumerate(split_cores(_all_cores(), count))]


def local_device_count() -> int:
    return max(int(config.cpu_devices), 1)


@functools.lru_cache(maxsize=None)
def _libgomp():
    """libgomp (the OpenMP runtime the kernels and the GEMM/conv library load), or None."""
    set_openmp_wait_defaults()          # before libgomp loads: it reads them once
    name = ctypes.util.find_library("gomp")
    for lib in ([name] if name else []) + ["libgomp.so.1"]:
        try:
            gomp = ctypes.CDLL(lib)
            gomp.omp_set_num_threads, gomp.omp_get_max_threads    # noqa: B018 (both exist)
            return gomp
        except (OSError, AttributeError):
            continue
    return None


def omp_max_threads() -> int | None:
    """The calling thread's OpenMP thread count (what the kernels' parallel loops and
    the GEMM/conv library's ``omp_get_max_threads()`` use), or None without libgomp."""
    gomp = _libgomp()
    return None if gomp is None else int(gomp.omp_get_max_threads())


def pin_current_thread(device: CpuDevice) -> None:
    """Run this thread (and the OpenMP threads it starts) on ``device``'s cores, with
    one OpenMP thread per core."""
    try:
        os.sched_setaffinity(0, set(device.cores))   # 0: the calling thread on Linux
    except (AttributeError, OSError):
        pass
    gomp = _libgomp()
    if gomp is not None:          # this thread's ICV: its parallel regions use its cores
        gomp.omp_set_num_threads(len(device.cores))


