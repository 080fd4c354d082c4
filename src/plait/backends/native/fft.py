"""The ``fft`` primitive's ``native`` rule: routed transforms call plait's own FFT library.

The library (source: :mod:`plait.codegen.c_fft`, vectorized across lines at the
target's vector width) is compiled once per machine and toolchain, cached in the kernel
disk cache like any kernel and started on a background thread when a program first
needs it, like the GEMM library (:mod:`plait.backends.native.gemm`). Its entry
point's address reaches each program's shared object through ``plait_fft_init(void **)``
when the program loads (:func:`init_library`), so the program itself compiles only a
few-line call.

:data:`ROUTED` says which transforms call it, chosen by measurement against the host
step (SciPy's pocketfft, ``lax.fft``'s impl; ``python -m benchmarks.fft`` and
``tests/native/test_native_fft.py``'s accuracy check); everything else stays that host
step. Programs calling the library cannot be exported as standalone C
(:mod:`plait.backends.native.standalone` refuses them).
"""
from __future__ import annotations

import ctypes
import functools
import math
import threading

import numpy as np

from plait.codegen.c_fft import fft_source
from plait.codegen.c_stripe import OOM_WHERE
from plait.config import set_openmp_wait_defaults
from plait.lax.fft import FftType, fft_p
from plait.stripe.targets import Target

#: ``(fft_type, operand dtype, number of transformed axes) -> largest length per axis``
#: of the transforms that call the library; lengths are powers of two >= 2. Measured on
#: Zen 4 (one thread, CPU time, load 9-11 on 2 cores): 512 x 512 rfft2 ~340 us against
#: SciPy's ~630 us (jax.jit's ~510 us at load 0.2); 512 rows of 512 points ~165 us
#: against SciPy's ~310 us.
ROUTED = {(FftType.RFFT, np.dtype(np.float32), 1): 512,
          (FftType.RFFT, np.dtype(np.float32), 2): 512}

#: the longest line the library transforms (its twiddle table's length)
MAX_LENGTH = max(ROUTED.values())

#: the widest vectors the library uses: 32 bytes (8 float32 lanes) keeps a 256-point
#: line block's four work planes (32 KiB) in Zen 4's L1 where 64-byte vectors spill to the
#: L2; Zen 4 splits 512-bit operations in two, so nothing is lost (measured, 512 x 512
#: rfft2, before the blocked intermediate: 360-390 us with 32-byte vectors against
#: 420-450 us with 64-byte ones)
MAX_VECTOR_BYTES = 32

_ENTRY = "plait_rfft_s"


def vector_bytes(target: Target) -> int:
    """The library's vector width on ``target``: its own, at most
    :data:`MAX_VECTOR_BYTES` (and at least SSE's 16 bytes)."""
    return min(max(target.vector_bytes, 16), MAX_VECTOR_BYTES)


def library_source(target: Target) -> str:
    """The C source of the FFT library for ``target``."""
    return fft_source(vector_bytes(target), MAX_LENGTH, OOM_WHERE)


@functools.lru_cache(maxsize=None)
def _library_for(target: Target):
    from plait.codegen.toolchain import build_shared_object, require_toolchain
    from plait.runtime import kernel_cache
    from plait.runtime.cpuinfo import cpu_info
    tc = require_toolchain()
    set_openmp_wait_defaults()       # before libgomp loads with this library
    src = library_source(target)
    key = kernel_cache.entry_key("plait-fft", src, tc.identity(),
                                 ",".join(sorted(cpu_info().flags)))
    return kernel_cache.load(key, lambda out: build_shared_object(src, out, tc), ctypes.CDLL)


def library(target: Target) -> ctypes.CDLL:
    """The loaded FFT library for ``target``, built on first use, then loaded from the
    kernel disk cache."""
    return _library_for(target)


_STARTED: set = set()


def _build_in_background(target: Target) -> None:
    """Start building (or loading) the library on a thread, once per process, while the
    compiler builds the program calling it (errors surface from :func:`library`)."""
    if target in _STARTED:
        return
    _STARTED.add(target)

    def build():
        try:
            _library_for(target)
        except Exception:      # reported by the foreground call of library()
            pass
    threading.Thread(target=build, name="plait-fft-build", daemon=True).start()


def init_library(lib, target: Target) -> None:
    """Give a loaded program's shared object the library's entry point, if it calls it."""
    try:
        fn = lib.plait_fft_init
    except AttributeError:
        return
    addr = ctypes.cast(getattr(library(target), _ENTRY), ctypes.c_void_p).value
    fn.restype = None
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    fn((ctypes.c_void_p * 1)(addr))


def _pow2(n: int) -> bool:
    return n >= 2 and n & (n - 1) == 0


def routes(eqn, target: Target) -> bool:
    """Whether the ``fft`` equation ``eqn`` calls the library on ``target`` (CPU only)."""
    if target.kind != "cpu" or eqn.prim is not fft_p:
        return False
    lengths = eqn.params["fft_lengths"]
    limit = ROUTED.get((eqn.params["fft_type"], np.dtype(eqn.inputs[0].aval.dtype),
                        len(lengths)))
    shape = eqn.inputs[0].aval.shape
    return (limit is not None and all(_pow2(n) and n <= limit for n in lengths)
            and 0 not in shape)


_DECLS = """
static void *plait_fft_fn[1];
void plait_fft_init(void **p) { plait_fft_fn[0] = p[0]; }
typedef int64_t (*plait_rfft_t)(int64_t, int64_t, int64_t, const float *, float *);
"""


def _fft(cp, eqn, name: str) -> bool:
    """The ``native`` rule: a call of the library (False when not routed)."""
    if not routes(eqn, cp.target):
        return False
    if not getattr(cp, "_fft_declared", False):
        cp.parts.insert(0, _DECLS)
        cp._fft_declared = True
        _build_in_background(cp.target)
    lengths = eqn.params["fft_lengths"]
    shape = eqn.inputs[0].aval.shape
    n = lengths[-1]
    m = lengths[0] if len(lengths) == 2 else 1
    batch = math.prod(shape[:len(shape) - len(lengths)])
    cp.parts.append(
        f"int64_t {name}(void **bufs) {{\n"
        f"  return ((plait_rfft_t)plait_fft_fn[0])({batch}, {m}, {n}, bufs[0], bufs[1]);\n}}")
    lanes = vector_bytes(cp.target) // 4
    padded = -(-(n // 2 + 1) // lanes) * lanes
    # the split intermediate of a 2-D transform, and the work planes
    cp.scratch[name] = (2 * m * padded * 4 if m > 1 else 0) + 4 * MAX_LENGTH * lanes * 4
    return True


fft_p.def_rule("native", _fft)
# the rule's call steps pass complex buffers, which fused kernels never see
fft_p.def_rule("native_complex", True)
# its call steps run in plait's FFT library, not the program's C
fft_p.def_rule("native_library", True)
