"""``dot_general`` as a call into plait's own shape-generic GEMM library.

A ``dot_general`` whose operands are (batched) matrices once their batch, free and
contracting dimensions are each collapsed to one strided dimension is a GEMM
``C[b] = A[b] @ B[b]``. Above :func:`route_macs` multiply-adds the partitioner leaves
such an equation out of fused kernels (:func:`routes`) and its ``native`` rule renders a
call step ``int64_t name(void **bufs)`` that passes sizes and strides to
``plait_gemm_<s|d>`` (source: :mod:`plait.codegen.c_gemm`). The library is compiled once
per machine and toolchain, cached in the kernel disk cache like any kernel, and its
function addresses are handed to each program's shared object through
``plait_gemm_init(void **)`` when it loads (:func:`init_library`), so a new matmul shape
compiles only its few-line call, never the GEMM.

The blocking is the cost model's, from the target's facts: the register tile is the
target's register block with the fewest loads per multiply-add, ``KC`` keeps a
``KC x NR`` panel of B in an eighth of the L2 (the micro-kernel streams it from the L2
while the accumulators stay in registers: the deeper the panel, the fewer passes over
C's tiles), ``M3`` keeps an
``M3 x KC`` slab of A in half the L2, ``N2`` keeps a
``KC x N2`` block of B in a quarter of the L3, and products under the target's
``gemm_parallel_macs`` (4M multiply-adds: two threads' pieces of tens of microseconds
each, far above a parallel region's wake-up) run on one thread.
"""
from __future__ import annotations

import ctypes
import functools
import math
import threading

import numpy as np

from plait.codegen.c_gemm import Blocking, gemm_source
from plait.codegen.c_stripe import OOM_WHERE
from plait.config import set_openmp_wait_defaults
from plait.core.graph import Graph, Var
from plait.lax.contractions import dot_general_p
from plait.lax.shape_ops import transpose_p
from plait.stripe.targets import Target, register_blocks

_CTYPES = {np.dtype(np.float32): ("float", "s"), np.dtype(np.float64): ("double", "d")}
_SUFFIXES = ("s", "d")
# the addresses plait_gemm_init receives, in order
_ENTRIES = tuple(f"plait_{f}_{s}" for f in ("gemm", "conv") for s in _SUFFIXES)


def _round_down(x: int, m: int) -> int:
    return max(x // m * m, m)


def _blocking(target: Target, dt, name: str, mr: int, vecs: int,
              vector_bytes: int) -> Blocking:
    ct = _CTYPES[np.dtype(dt)][0]
    sz = np.dtype(dt).itemsize
    vlen = vector_bytes // sz
    nr = vecs * vlen
    kc = _round_down(target.l2_bytes // 8 // (nr * sz), 8)
    m3 = _round_down(target.l2_bytes // 2 // (kc * sz), mr)
    n2 = _round_down(target.l3_bytes // 4 // (kc * sz), nr)
    # a matrix-vector product streams its matrix once: split when it is an eighth of an
    # L2 (each core then keeps its share cached across calls in a loop: see gemv_)
    return Blocking(ct, name, vlen, mr, vecs, kc, n2, m3, target.gemm_parallel_macs, sz,
                    target.l2_bytes // 8 // sz)


def blockings(target: Target) -> tuple[tuple[Blocking, Blocking], ...]:
    """``(main, narrow)`` blockings of float32 and float64 for ``target`` (see the module
    docstring); the narrow tile is one vector wide, for products with few columns
    (a half-width one ran N = 10 float32 columns as two panels: 128 x 1024 x 10 on one
    Sapphire Rapids core at 36 GFLOP/s, 53 with one full-width panel).

    The main tile's panel of B is deep (an eighth of the L2) rather than L1-resident:
    measured single-threaded on Zen 4 (32 KiB L1, 1 MiB L2), the 6x4-vector tile with
    KC = 512 ran 1024^3 at 99 GFLOP/s against 74 for the 9x3 tile with the L1's KC = 80,
    and W1's shapes (M = 128) at 96-102 against 82-94; KC from 384 to 1024 measured
    alike. The narrow tile's panel is as deep (it was half the L1: on one Sapphire Rapids
    core 128 x 1024 x 10 float32 ran at 69 GFLOP/s with KC = 384, 79 with 4096; 1024 x
    1024 x 10 at 56 and 70; a single column panel reuses no A, so a shallow panel only
    adds passes over C)."""
    vb = target.vector_bytes
    mr, vecs = register_blocks(vb)[0]           # the fewest loads per multiply-add
    regs = 32 if vb >= 64 else 16
    narrow_rows = min(12, regs - 2)
    return tuple((_blocking(target, dt, sfx, mr, vecs, vb),
                  _blocking(target, dt, sfx + "n", narrow_rows, 1, vb))
                 for dt, sfx in ((np.float32, "s"), (np.float64, "d")))


def library_source(target: Target, suffix: str) -> list[str]:
    """The C source of the GEMM library of one dtype (``suffix`` "s" or "d"), as the
    translation units built side by side."""
    pairs = tuple(p for p in blockings(target) if p[0].suffix == suffix)
    return gemm_source(pairs, target.vector_bytes, OOM_WHERE, im2col_bytes(target),
                       direct_pad_bytes(target))


def im2col_bytes(target: Target) -> int:
    """Bytes of one im2col chunk of a convolution: a quarter of the L2, so the chunk a
    thread gathers is still in its core's L2 when the GEMM packs it (an eighth of the
    L3 left it to the shared L3: the W4 step on one Zen 4 core took 836 ms of CPU
    against 728 ms with a quarter of its 1 MiB L2, 738 ms with an eighth, 752 ms
    with half)."""
    return max(target.l2_bytes // 4, 1 << 16)


def direct_pad_bytes(target: Target) -> int:
    """Most bytes of the zero-padded input copy a direct convolution makes at a time (a
    run of whole images; at least one image): a quarter of the L3, so a large batch
    does not double the input's memory."""
    return max(target.l3_bytes // 4, 1 << 20)


# The micro-kernels are explicit vector code: -O2 makes them as fast as -O3 does, in a
# quarter of the compile time (measured: 1.1 s against 4.0 s of gcc 12).
_FLAGS = ("-O2",)


@functools.lru_cache(maxsize=None)
def _library_for(target: Target, suffix: str):
    from plait.codegen.toolchain import build_shared_object, require_toolchain
    from plait.runtime import kernel_cache
    from plait.runtime.cpuinfo import cpu_info
    tc = require_toolchain()
    # before libgomp loads with this library (on a background thread, often before the
    # first program's library): set later, libgomp's 300k-round spin would stay on
    # (DP-SGD's epoch took 9 s instead of 1.2 s, W1's step 20x longer, on 2 busy cores)
    set_openmp_wait_defaults()
    src = library_source(target, suffix)
    key = kernel_cache.entry_key("plait-gemm", *src, tc.identity(), " ".join(_FLAGS),
                                 ",".join(sorted(cpu_info().flags)))
    return kernel_cache.load(key, lambda out: build_shared_object(src, out, tc, _FLAGS),
                             ctypes.CDLL)


def library(suffix: str, target: Target | None = None) -> ctypes.CDLL:
    """The loaded GEMM library of one dtype ("s": float32, "d": float64) for ``target``
    (default: the host's), built on first use, then loaded from the kernel disk cache.
    Programs pass the target they were compiled for."""
    if target is None:
        from plait.backends.native.target import host_target
        target = host_target()
    return _library_for(target, suffix)


_STARTED: set = set()


def _build_in_background(target: Target, suffix: str) -> None:
    """Start building (or loading) a library on a thread, once per process, so a cold
    cache compiles it while the C compiler also builds the program calling it; the
    program's load then waits for it (errors surface there, from :func:`library`)."""
    if (target, suffix) in _STARTED:
        return
    _STARTED.add((target, suffix))

    def build():
        try:
            _library_for(target, suffix)
        except Exception:      # reported by the foreground call of library()
            pass
    threading.Thread(target=build, name="plait-gemm-build", daemon=True).start()


def addresses(uses: set, target: Target) -> list[int]:
    """Addresses of the entry points in :data:`_ENTRIES` order in ``target``'s libraries;
    0 for a dtype whose suffix is not in ``uses`` (its library is not built)."""
    out = []
    for e in _ENTRIES:
        sfx = e.rsplit("_", 1)[1]
        out.append(ctypes.cast(getattr(library(sfx, target), e), ctypes.c_void_p).value
                   if sfx in uses else 0)
    return out


def init_library(lib, target: Target) -> None:
    """Give a loaded program's shared object the addresses of the libraries (built for
    ``target``, the program's) it calls."""
    try:
        fn = lib.plait_gemm_init
    except AttributeError:
        return
    uses = {sfx for sfx in _SUFFIXES if hasattr(lib, f"plait_gemm_uses_{sfx}")}
    ptrs = addresses(uses, target)
    fn.restype = None
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    fn((ctypes.c_void_p * len(ptrs))(*ptrs))


# -- which dot_generals are GEMMs ------------------------------------------------------
def _strides(shape: tuple) -> list[int]:
    out, s = [], 1
    for d in reversed(shape):
        out.append(s)
        s *= d
    return out[::-1]


def _collapse(dims: list[int], shape: tuple, strides: list[int]) -> tuple[int, int] | None:
    """``(size, stride)`` of ``dims`` (in this order) viewed as one strided dimension,
    or None when they are not one arithmetic progression in memory."""
    kept = [(shape[d], strides[d]) for d in dims if shape[d] != 1]
    size = math.prod(n for n, _ in kept)
    for (n0, s0), (n1, s1) in zip(kept, kept[1:]):
        if s0 != s1 * n1:
            return None
    return size, (kept[-1][1] if kept else 1)


def _operand_view(shape: tuple, batch: list, contract: list) -> tuple | None:
    """``((batch, sb), (free, sf), (contract, sc))`` of a C-contiguous operand of
    ``shape`` with these batch and contracting dimensions (free ones in increasing
    order), or None when a group is not one strided dimension."""
    free = [i for i in range(len(shape)) if i not in contract and i not in batch]
    st = _strides(shape)
    parts = (_collapse(batch, shape, st), _collapse(free, shape, st),
             _collapse(contract, shape, st))
    return None if any(p is None for p in parts) else parts


def gemm_view(eqn) -> tuple | None:
    """``(dtype, batch, M, N, K, (sab, sam, sak), (sbb, sbk, sbn))`` of a ``dot_general``
    over C-contiguous operands, or None when it is not one strided batched GEMM of a
    dtype the library computes."""
    if eqn.prim is not dot_general_p:
        return None
    lhs, rhs = eqn.inputs[0].aval, eqn.inputs[1].aval
    out = eqn.outputs[0].aval
    dt = np.dtype(lhs.dtype)
    if dt not in _CTYPES or np.dtype(rhs.dtype) != dt or np.dtype(out.dtype) != dt:
        return None
    if 0 in lhs.shape or 0 in rhs.shape or 0 in out.shape:
        return None
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    left = _operand_view(lhs.shape, list(lb), list(lc))
    right = _operand_view(rhs.shape, list(rb), list(rc))
    if left is None or right is None:
        return None
    (batch, sab), (m, sam), (k, sak) = left
    (_, sbb), (n, sbn), (_, sbk) = right
    return dt, batch, m, n, k, (sab, sam, sak), (sbb, sbk, sbn)


def route_macs(target: Target) -> int:
    """Multiply-adds from which a GEMM-shaped ``dot_general`` calls the library rather
    than joining a fused kernel: where the packed library's fixed cost (packing, one
    call) is paid back, a contraction over a few register tiles."""
    return target.gemm_route_macs


def routes(eqn, target: Target) -> bool:
    """Whether ``eqn`` leaves the fused kernels to call the GEMM library (a host CPU
    library: CPU targets only)."""
    if target.kind != "cpu":
        return False
    v = gemm_view(eqn)
    return v is not None and v[1] * v[2] * v[3] * v[4] >= route_macs(target)


def _folded(eqn, pos: int, perm: tuple):
    """``eqn`` (a ``dot_general``) reading, at operand ``pos``, the array that
    ``transpose(., perm)`` made its operand from, or None when that changes the order of
    the output's dimensions (the operand's free dimensions would come out permuted) or
    leaves the operand not one strided matrix per batch."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    c, b = (lc, lb) if pos == 0 else (rc, rb)
    c2, b2 = tuple(perm[d] for d in c), tuple(perm[d] for d in b)
    free = [perm[d] for d in range(len(perm)) if d not in c and d not in b]
    if free != sorted(free) or _operand_view(tuple(
            eqn.inputs[pos].aval.shape[perm.index(d)] for d in range(len(perm))),
            list(b2), list(c2)) is None:
        return None
    dn = ((c2, rc), (b2, rb)) if pos == 0 else ((lc, c2), (lb, b2))
    return dict(eqn.params, dimension_numbers=dn)


def fold_transposes(graph: Graph, target: Target) -> Graph:
    """``graph`` with each ``transpose`` whose every reader is a ``dot_general`` the GEMM
    library computes (:func:`routes`) folded into those readers' dimension numbers: the
    library's packing reads the transpose's operand in place with its strides, where
    the transposed copy cost a kernel writing and the GEMM reading a whole matrix
    (``a @ b.T`` at 1024 x 1024 float32 on one core: 1675 us with the copy, 751 us
    folded). A transpose that is an output of the graph or has any other reader stays,
    and so does one whose fold would permute the product's output dimensions."""
    if target.kind != "cpu":
        return graph
    made = {e.outputs[0]: e for e in graph.eqns if e.prim is transpose_p}
    if not made:
        return graph
    readers: dict = {}
    for e in graph.eqns:
        for a in {a for a in e.inputs if isinstance(a, Var) and a in made}:
            readers.setdefault(a, []).append(e)
    outs = {v for v in graph.outvars if isinstance(v, Var)}
    # a transpose each of whose readers reads it only where a fold keeps that operand one
    # strided matrix and the output's dimension order
    fold = {t for t, rs in readers.items() if t not in outs and all(
        e.prim is dot_general_p and all(
            _folded(e, p, made[t].params["permutation"]) is not None
            for p, a in enumerate(e.inputs) if a is t) for e in rs)}

    def rewritten(e):
        for p, a in enumerate(e.inputs):
            if a in fold:
                src = made[a]
                e = e.replace(inputs=[src.inputs[0] if q == p else x
                                      for q, x in enumerate(e.inputs)],
                              params=_folded(e, p, src.params["permutation"]))
        return e
    # readers must still be library GEMMs with every fold of their operands applied (a
    # fold dropped for one reader changes what its other operand's fold gives)
    todo = list(fold)
    while todo:
        t = todo.pop()
        if t in fold and not all(routes(rewritten(e), target) for e in readers[t]):
            fold.discard(t)
            todo.extend(a for e in readers[t] for a in e.inputs if a in fold)
    if not fold:
        return graph
    eqns = [rewritten(e) for e in graph.eqns
            if not (e.prim is transpose_p and e.outputs[0] in fold)]
    return Graph(graph.constvars, graph.invars, eqns, graph.outvars, graph.name)


_DECLS = """
static void *plait_gemm_fn[4];
void plait_gemm_init(void **p) { for (int i = 0; i < 4; ++i) plait_gemm_fn[i] = p[i]; }
typedef int64_t (*plait_gemm_t)(int64_t, int64_t, int64_t, int64_t,
                                const void *, int64_t, int64_t, int64_t,
                                const void *, int64_t, int64_t, int64_t,
                                void *, int64_t, int64_t, int64_t);
typedef int64_t (*plait_conv_t)(const int64_t *, const void *, const void *, void *);
"""


def declare(cp, dt) -> None:
    """Declare the library's entry points in ``cp`` (once), mark that it calls the
    library of dtype ``dt`` and start building that library."""
    if not hasattr(cp, "_gemm_declared"):
        cp.parts.insert(0, _DECLS)
        cp._gemm_declared = set()
    sfx = _CTYPES[np.dtype(dt)][1]
    if sfx not in cp._gemm_declared:
        cp._gemm_declared.add(sfx)
        cp.parts.insert(1, f"int plait_gemm_uses_{sfx} = 1;")
        _build_in_background(cp.target, sfx)


def entry_index(kind: str, dt) -> int:
    """Index in ``plait_gemm_fn`` of ``plait_<kind>_<s|d>`` for dtype ``dt``."""
    return _ENTRIES.index(f"plait_{kind}_{_CTYPES[np.dtype(dt)][1]}")


def _dot_general(cp, eqn, name: str) -> bool:
    """The ``native`` rule: a call of the GEMM library (False if not a GEMM)."""
    v = gemm_view(eqn)
    if v is None:
        return False
    dt, batch, m, n, k, (sab, sam, sak), (sbb, sbk, sbn) = v
    declare(cp, dt)
    fn = entry_index("gemm", dt)
    cp.parts.append(
        f"int64_t {name}(void **bufs) {{\n"
        f"  return ((plait_gemm_t)plait_gemm_fn[{fn}])({batch}, {m}, {n}, {k},\n"
        f"      bufs[0], {sab}, {sam}, {sak}, bufs[1], {sbb}, {sbk}, {sbn},\n"
        f"      bufs[2], {m * n}, {n}, 1);\n}}")
    cp.scratch[name] = 0      # pack buffers are per thread and kept between calls
    return True


dot_general_p.def_rule("native", _dot_general)
# its call steps run in the GEMM library (compiled once per machine), not the program's C
dot_general_p.def_rule("native_library", True)
