"""Replicas: ``pmap`` over CPU devices (groups of cores) and, after ``initialize()``,
over the devices of every process of an MPI job.

``plait.lax`` holds the collectives (``psum``, ``all_gather``, ...); this package
runs replica programs: devices (:mod:`.devices`), shared-memory collectives between
local replicas (:mod:`.local`), MPI between processes (:mod:`.mpi`), ``pmap``
(:mod:`.pmap`).
"""
from __future__ import annotations

from plait.distributed.runtime import (process_index, process_count, devices, local_devices,
                                       device_count, local_device_count)
from plait.distributed.pmap import pmap, last_run_times, ReplicaTimes
from plait.config import launched_by_mpirun


def initialize(timeout: float | None = None) -> None:
    """Join the MPI job this process was started in (``mpirun -n N python ...``); with
    one process (plain ``python``) this is a no-op world of size 1. Needs mpi4py
    (``pip install "plait[mpi]"``)."""
    from plait.distributed import mpi
    mpi.initialize(timeout)


def shutdown() -> None:
    """Leave the MPI job (collectives then run within this process only)."""
    from plait.distributed import mpi
    mpi.shutdown()


__all__ = ["pmap", "last_run_times", "ReplicaTimes", "initialize", "shutdown",
           "launched_by_mpirun", "process_index", "process_count", "devices",
           "local_devices", "device_count", "local_device_count"]
