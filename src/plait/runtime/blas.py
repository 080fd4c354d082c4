"""The thread count of NumPy's OpenBLAS for products made beside plait's C compiler.

OpenBLAS runs one product on all its threads in lockstep, so a thread sharing its core
with another process slows the whole product, its partners waiting for it. Tiered
execution answers a new program's first calls with NumPy products while the program's
(and the GEMM library's) compiler processes run beside them. Measured on 2 cores
(128 x 1024 x 1024 float32, 20 products): 1.2 ms each alone on 2 threads; beside one
``gcc`` 7.0 ms on 2 threads and 2.1 ms on 1 thread; beside two, 2.6 and 4.3 ms. So a
call inside :func:`beside_builds` runs on the cores the running compilers leave (at
least one): one thread fewer per compiler.

OpenBLAS's thread count is one setting of the whole process, so the calls that lower it
hold a lock until they restore it; another thread's NumPy product in that window also
runs on fewer threads. Where no OpenBLAS with the entry points below is loaded (NumPy
built on another BLAS) nothing changes.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import threading
from typing import Callable, Iterator

from plait.codegen.toolchain import compilers_running
from plait.config import loaded_openblas
from plait.runtime.cpuinfo import cpu_info

# (get, set) thread-count entry points: NumPy's and SciPy's wheels (scipy_openblas64),
# other 64-bit-integer builds, the plain library
_ENTRY_POINTS = (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
                 ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
                 ("openblas_get_num_threads", "openblas_set_num_threads"))
_LOCK = threading.RLock()     # reentrant: a product inside another's window changes nothing


@functools.lru_cache(maxsize=None)
def controls() -> tuple[tuple[Callable[[], int], Callable[[int], None]], ...]:
    """``(get, set)`` of the thread count of each OpenBLAS loaded when first asked
    (NumPy's is loaded before plait is imported)."""
    out = []
    for _, lib in loaded_openblas():
        for get_name, set_name in _ENTRY_POINTS:
            get, set_ = getattr(lib, get_name, None), getattr(lib, set_name, None)
            if get is not None and set_ is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                set_.restype, set_.argtypes = None, [ctypes.c_int]
                out.append((get, set_))
                break
    return tuple(out)


@contextlib.contextmanager
def beside_builds() -> Iterator[None]:
    """Run the BLAS calls inside on at most the cores plait's running compiler
    processes leave free (see the module), then restore each library's thread count."""
    busy = compilers_running()
    if not busy:
        yield
        return
    threads = max(1, cpu_info().cores - busy)
    with _LOCK:
        saved = []
        try:
            for get, set_ in controls():
                old = get()
                if old > threads:
                    set_(threads)
                    saved.append((set_, old))
            yield
        finally:
            for set_, old in saved:
                set_(old)
