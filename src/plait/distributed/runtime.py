"""Which devices and processes exist: this process alone, or an MPI job after
``initialize()``. JAX's names: ``process_index``, ``process_count``, ``devices``
(global), ``local_devices``, ``device_count``, ``local_device_count``."""
from __future__ import annotations

from plait.distributed.devices import CpuDevice, local_device_count as _ldc, make_devices

class _Joined:
    """The MPI world (``plait.distributed.mpi.World``) once joined, else None."""

    world = None


def world():
    """The joined MPI world, or None when this process runs alone."""
    return _Joined.world


def set_world(w) -> None:
    _Joined.world = w


def process_index() -> int:
    w = _Joined.world
    return 0 if w is None else w.rank


def process_count() -> int:
    w = _Joined.world
    return 1 if w is None else w.size


def local_devices() -> list[CpuDevice]:
    """This process's devices (``PLAIT_CPU_DEVICES`` of them)."""
    return make_devices(_ldc(), process_index())


def devices() -> list[CpuDevice]:
    """Every process's devices, by global id (processes have equal device counts)."""
    n = _ldc()
    out = []
    for p in range(process_count()):
        out.extend(make_devices(n, p) if p == process_index() else
                   [CpuDevice(p * n + k, p, ()) for k in range(n)])
    return out


def local_device_count() -> int:
    return _ldc()


def device_count() -> int:
    return _ldc() * process_count()
