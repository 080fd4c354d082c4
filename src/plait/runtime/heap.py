"""glibc's malloc told to keep the memory plait's programs free, so the next call reuses
it instead of faulting fresh pages in (``keep_heaps``)."""
from __future__ import annotations

import ctypes
import functools

from plait.config import malloc_set_by_user

# glibc's mallopt parameters (malloc.h) and the values keep_heaps sets: blocks up to
# 32 MiB (glibc's largest automatic mmap threshold) come from the arenas' heaps; an
# arena gives memory back only beyond 128 MiB free at its top and keeps a 64 MiB pad,
# which also stops glibc from unmapping a thread arena's heap when it empties
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
MMAP_THRESHOLD = 32 << 20     # larger blocks are mapped per allocation (runtime.recycle)
_KEEP_HEAPS = ((_M_MMAP_THRESHOLD, MMAP_THRESHOLD), (_M_TRIM_THRESHOLD, 128 << 20),
               (_M_TOP_PAD, 64 << 20))


@functools.lru_cache(maxsize=None)
def keep_heaps() -> bool:
    """Make glibc's malloc keep the memory the process frees (process-wide, once, unless
    the user set malloc's thresholds); whether it did.

    Native executables allocate their intermediates and kernel temporaries per call.
    With glibc's defaults a block of more than 128 KiB is mapped fresh and unmapped when
    freed (the automatic threshold only rises to the largest block freed, and the top
    of the heap is trimmed past twice that), so every call faulted its temporaries'
    pages in again: a DP-SGD step (batch 64) allocates ~11 MB in one kernel, and that
    kernel ran 10.1 ms with 3.6 ms of it in its loops; kept, the whole step went from
    22.0 to 11.4 ms (one thread, best of 20).

    A replica thread allocates from its own arena, whose heaps hold 64 MiB each; glibc
    unmaps a heap (beyond the first) as soon as it is empty. A W4 replica step (batch 32)
    needs more than one heap, so every step mapped fresh heaps and unmapped them (1 to 5
    per replica per step), faulting their pages in again (3,000-6,000 minor faults per
    replica step) and, with two replicas in one process, interrupting the other
    replica's core to flush its TLB at every unmap. Kept, the replica threads fault no
    page after the first steps: over 6 two-replica W4 steps the process's system time
    went from 0.51 s to 0.20 s and its CPU time x0.97 (paired runs, same peak memory)."""
    if malloc_set_by_user():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):       # not glibc: its own policy stands
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return all([mallopt(param, value) == 1 for param, value in _KEEP_HEAPS])
