"""Large native buffers recycled between calls instead of mapped fresh (``take``).

glibc's malloc maps every block of 32 MiB or more (its largest automatic mmap threshold,
which :mod:`plait.runtime.heap` already sets) with ``mmap`` and unmaps it when freed, so
a program whose outputs or intermediates are that large faulted in and zeroed every page
of them on every call: a jitted elementwise chain over 8M float32 (32 MiB in, 32 MiB
out) spent more time in those page faults than in its loop (6.8 ms a call against
3.2 ms for its loop, ~590 faults a call). ``take`` hands out such buffers from a pool of
freed ones of the same size: the array it returns has as its base a lease holding the
raw memory, and when the last view of the array dies the lease puts the memory back.

The pool holds at most :data:`MAX_FREE_BYTES` of free buffers (the oldest go first);
below :data:`MIN_BYTES` malloc's own heaps already keep freed memory. Thread-safe; a
lease may die in any thread, inside a pool operation included (a re-entrant lock).
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from plait.runtime.heap import MMAP_THRESHOLD

MIN_BYTES = MMAP_THRESHOLD          # smaller blocks come from malloc's kept heaps
MAX_FREE_BYTES = 512 << 20          # free memory the pool may hold


class _Pool:
    """Free raw buffers by size, oldest first, at most ``MAX_FREE_BYTES`` in all."""

    def __init__(self):
        self.lock = threading.RLock()
        self.free: OrderedDict[int, list[np.ndarray]] = OrderedDict()
        self.bytes = 0

    def get(self, nbytes: int) -> np.ndarray | None:
        with self.lock:
            bufs = self.free.get(nbytes)
            if not bufs:
                return None
            raw = bufs.pop()
            if not bufs:
                del self.free[nbytes]
            self.bytes -= nbytes
            return raw

    def put(self, raw: np.ndarray) -> None:
        n = raw.nbytes
        if n > MAX_FREE_BYTES:
            return
        with self.lock:
            while self.bytes + n > MAX_FREE_BYTES and self.free:
                size, bufs = next(iter(self.free.items()))
                bufs.pop(0)
                self.bytes -= size
                if not bufs:
                    del self.free[size]
            self.free.setdefault(n, []).append(raw)
            self.free.move_to_end(n)
            self.bytes += n

    def clear(self) -> None:
        with self.lock:
            self.free.clear()
            self.bytes = 0


_POOL = _Pool()


class _Lease:
    """The base of an array ``take`` returned: its raw memory, given back to the pool
    when the array and every view of it are gone."""

    __slots__ = ("raw", "__array_interface__")

    def __init__(self, raw: np.ndarray, shape: tuple, dtype: np.dtype):
        self.raw = raw
        self.__array_interface__ = {"data": (raw.ctypes.data, False), "shape": shape,
                                    "typestr": dtype.str, "version": 3}

    def __del__(self):
        pool = _POOL         # None while the interpreter shuts down
        if pool is not None:
            pool.put(self.raw)


def take(shape: tuple, dtype: np.dtype) -> np.ndarray | None:
    """An uninitialised C-contiguous array of ``shape`` and ``dtype`` on recycled memory,
    or None when it is smaller than :data:`MIN_BYTES` (malloc serves it well). Raises
    MemoryError as ``np.empty`` does."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for d in shape:
        nbytes *= d
    if nbytes < MIN_BYTES:
        return None
    raw = _POOL.get(nbytes)
    if raw is None:
        raw = np.empty(nbytes, np.uint8)
    return np.asarray(_Lease(raw, tuple(shape), dtype))


def free_bytes() -> int:
    """Bytes of free buffers the pool holds now."""
    return _POOL.bytes


def clear() -> None:
    """Give every free buffer back to the system."""
    _POOL.clear()
