"""Render a Stripe program as one C function for a CPU (loops, OpenMP, vector code).

The function is ``int64_t <name>(void **bufs)`` with one pointer per program buffer,
in the program's buffer order. It returns 0, or an allocation-failure status
(:func:`~plait.codegen.c_stripe.oom_status`) when a temporary could not be allocated:
every ``malloc`` is checked, a block whose temporaries are missing skips its
statements, and a failure inside an OpenMP loop is recorded in a shared status word
(the loop runs to its end and frees what it allocated; the results are then garbage
and the caller discards them). Blocks tagged ``parallel`` get an OpenMP ``parallel
for`` on their outermost loop, or, when several follow each other at the top (with only
serial blocks between them, each run by one thread), one ``parallel`` region whose
team shares them out in turn (the threads start once per kernel, not once per block);
``mac_regblock`` blocks become a GNU C vector micro-kernel; innermost loops that reduce
into a view accumulate in registers. A function whose blocks are all elementwise maps
(:func:`elementwise_only`) is auto-vectorized at the target's full vector width, others
at 256 bits (see the prelude). A float32 map loop calling plait's own vector math
(:func:`vector_loop`) is also rendered as explicit 16-lane code, which the compiler
keeps where it targets AVX-512 (``PLAIT_V16``): GCC cannot vectorize exp's scaling into
one ``vscalefps`` or the clamps into min/max, and the tanh/exp/sigmoid chain of the
kernel benchmark took 0.575 ns per element against 0.611 auto-vectorized (one Sapphire
Rapids core, in L2), 2.45 ms against 2.62 over 8M elements on two cores (best of 40).
Expressions, loops and views come from the C-family base
(:class:`~plait.codegen.c_stripe.CFamilyRenderer`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from plait.codegen.c_expr import C_TYPES, SCALAR_HELPERS, literal
from plait.codegen.c_stripe import (CFamilyRenderer, _cname, _identity, _Scope, loop_indexes,
                                    oom_status, temp_elements)
from plait.lax.elementwise_spec import by_intrinsic
from plait.stripe import ir


def _team_loop(st) -> bool:
    """Whether ``st`` is a block whose outermost loop is split over the OpenMP team."""
    return isinstance(st, ir.Block) and "parallel" in st.tags and st.iterations > 1


def _serial(st) -> bool:
    """Whether ``st`` is a block with no parallel loop anywhere in it."""
    return isinstance(st, ir.Block) and not any(
        "parallel" in b.tags for b in ir.walk_blocks(st))


def _team_regions(stmts) -> list[tuple[int, int]]:
    """``(start, stop)`` of each run of top-level statements that one OpenMP team can
    run: it starts and ends with a parallel block, holds at least two, and between
    them only blocks without a parallel loop (one thread runs each, ``single``)."""
    out, start, last, loops = [], None, None, 0
    for k, st in enumerate(list(stmts) + [None]):
        if st is not None and _team_loop(st):
            start = k if start is None else start
            last, loops = k, loops + 1
        elif st is None or not _serial(st):
            if start is not None and loops > 1:
                out.append((start, last + 1))
            start, last, loops = None, None, 0
    return out


# local allocations up to this size live on the stack (OpenMP threads have >= 2 MB)
STACK_BYTES = 32 * 1024

# _POSIX_C_SOURCE first: clock_gettime needs it under -std=c11 (with -fopenmp, -pthread
# implied an older value), and it equals what CPython's pyconfig.h defines, so including
# Python.h after the prelude redefines nothing.
PRELUDE = r"""
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static inline double plait_now(void) {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
#include <math.h>
""" + SCALAR_HELPERS + r"""/* record a failed allocation (any thread, inside or outside an OpenMP region) */
static inline void plait_oom(int64_t *status, int64_t code) { __atomic_store_n(status, code, __ATOMIC_RELAXED); }
/* auto-vectorized loops use 256-bit vectors: GCC 12.2 at -O3 -march=native with 512-bit
   auto-vectorization computed a wrong value in a fused pad/diff/reduce kernel (the jit(grad)
   case in tests/native/test_native_vector_width.py); explicit vector types still use the
   target's full width. Kernels that are only elementwise maps (PLAIT_KERNEL_WIDE: no
   reduction, padding, contraction or special step) use the full width: a float32
   tanh/exp/sigmoid chain took 2.35 TSC cycles per element at 256 bits, 1.76 at 512
   (one Zen 4 core, in cache), and 0.77 ns against 0.63 on one Sapphire Rapids core
   (in L2, 11 interleaved rounds, medians) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PLAIT_KERNEL __attribute__((target("prefer-vector-width=256")))
#define PLAIT_KERNEL_WIDE __attribute__((target("prefer-vector-width=512")))
#else
#define PLAIT_KERNEL
#define PLAIT_KERNEL_WIDE
#endif
/* drivers only allocate, call kernels and free: GCC's -O3 spent a quarter of a W4 step's
   compiler time (1.23 s -> 0.95 s of CPU without it) scheduling and allocating registers
   in its one long driver, for no gain at run time, so drivers are not optimized */
#if defined(__GNUC__) && !defined(__clang__)
#define PLAIT_DRIVER __attribute__((optimize("O0")))
#else
#define PLAIT_DRIVER
#endif
/* float register sums start at -0.0, the identity of IEEE addition (OpenMP's + uses +0.0) */
#pragma omp declare reduction(plait_addf : float : omp_out = omp_out + omp_in) initializer(omp_priv = -0.0f)
#pragma omp declare reduction(plait_addd : double : omp_out = omp_out + omp_in) initializer(omp_priv = -0.0)
"""



STORAGE_TYPES = dict(C_TYPES, bool="uint8_t")   # the C type of each dtype's buffers


class CpuRenderer(CFamilyRenderer):
    """Renders one Stripe program as a C function with OpenMP loops."""

    cpu = True

    def __init__(self, program: ir.Program, fn_name: str, timed: bool = False,
                 where: int = 0, shared: frozenset = frozenset()):
        super().__init__(program, fn_name, shared)
        # booleans are stored as bytes holding 0 or 1 (NumPy's layout) and computed as
        # _Bool: GCC does not vectorize a loop loading through a _Bool pointer ("complicated
        # access pattern"), so every select on a saved mask (ReLU's backward) ran scalar
        self.types = STORAGE_TYPES
        self.timed = timed     # accumulate each top-level block's time in <fn>_t[]
        self.where = where     # this function's number in allocation-failure statuses
        self.in_team = False   # rendering inside a shared parallel region (body)
        # while rendering a 16-lane loop (vector_loop): its block, each view's element
        # stride along the loop (0 or 1), and the C bound of the loop
        self.vec: tuple[ir.Block, dict[str, int], str] | None = None

    def open_loop(self, blk: ir.Block, loops: list, k: int, cv: str, rng: tuple,
                  scope: _Scope) -> None:
        """The outermost loop of a ``parallel`` block is an OpenMP ``parallel for``; the
        innermost loop accumulates reductions in registers, or steps 16 lanes at a time in
        a 16-lane loop (:meth:`block`)."""
        if k == 0 and _team_loop(blk):
            self.emit("#pragma omp for schedule(static)" if self.in_team
                      else "#pragma omp parallel for schedule(static)")
        if k < len(loops) - 1:
            return super().open_loop(blk, loops, k, cv, rng, scope)
        if self.vec is not None and self.vec[0] is blk:
            self.vec = (blk, self.vec[1], rng[1])
            self.emit(f"for (int64_t {cv} = {rng[0]}; {cv} < {rng[1]}; {cv} += 16) {{")
            return
        if k > 0 or not _team_loop(blk):
            self.reduction_prologue(blk, loops[k].name, scope)
            if not scope.reductions and independent_iterations(blk, loops[k].name, scope.roots):
                self.emit("#pragma GCC ivdep")
        super().open_loop(blk, loops, k, cv, rng, scope)

    def block(self, blk: ir.Block, parent: _Scope) -> None:
        """A float32 elementwise loop that calls plait's vector math (:func:`vector_loop`)
        is rendered twice: as 16-lane vector code (``plait_v16f``,
        :data:`~plait.lax._vecmath_c.V16_C`) where the prelude sets ``PLAIT_V16``
        (AVX-512), and as the scalar loop GCC auto-vectorizes elsewhere. Its loop steps 16
        elements; the last step masks the lanes past the end (:meth:`body`). Explicit
        vectors are full width in any kernel (the prelude's 256-bit limit is for GCC's
        auto-vectorizer)."""
        strides = vector_loop(blk, parent.roots) if self.vec is None else None
        if strides is None:
            return super().block(blk, parent)
        self.emit("#if PLAIT_V16")
        self.vec = (blk, strides, "")
        super().block(blk, parent)
        self.vec = None
        self.emit("#else")
        super().block(blk, parent)
        self.emit("#endif")

    def alloc_temp(self, r: ir.Refinement, cv: str, size: int, frees: list) -> str:
        """Small temporaries live on the stack; others are ``malloc``-ed (checked: a
        failure is recorded in the status and the block skips its statements)."""
        nbytes = size * np.dtype(ir.np_dtype(r.dtype)).itemsize
        if nbytes <= STACK_BYTES:
            return super().alloc_temp(r, cv, size, frees)
        ctype = self.types[r.dtype]
        self.emit(f"{ctype} *{cv} = ({ctype} *)malloc(sizeof({ctype}) * {size});")
        self.emit(f"if (!{cv}) plait_oom(&plait_status, {oom_status(nbytes, self.where)}LL);")
        frees.append(cv)
        return ""

    def body(self, blk: ir.Block, scope: _Scope) -> None:
        """With ``timed``, each top-level block adds its time to ``<fn>_t[]``. Otherwise
        consecutive top-level ``parallel`` blocks share one OpenMP team (a ``parallel``
        region holding one ``for`` per block, each ending at the team's barrier): the
        threads start once, not once per block (an Adam update's four parameter loops,
        a momentum update's two)."""
        if self.vec is not None and self.vec[0] is blk:
            return self.vector_body(blk, scope)
        if blk is not self.p.entry:
            return super().body(blk, scope)
        if not self.timed:
            regions = dict(_team_regions(blk.stmts))
            i = 0
            while i < len(blk.stmts):
                if i not in regions:
                    self.stmt(blk.stmts[i], scope)
                    i += 1
                    continue
                self.emit("#pragma omp parallel")
                self.emit("{")
                self.depth += 1
                self.in_team = True
                for st in blk.stmts[i:regions[i]]:
                    if not _team_loop(st):
                        self.emit("#pragma omp single")
                    self.stmt(st, scope)
                self.in_team = False
                self.depth -= 1
                self.emit("}")
                i = regions[i]
            return
        timer = 0
        for st in blk.stmts:
            if isinstance(st, ir.Block):
                self.emit("{ double t_ = plait_now();")
                self.stmt(st, scope)
                self.emit(f"{self.fn}_t[{timer}] += plait_now() - t_; }}")
                timer += 1
            else:
                self.stmt(st, scope)

    def vector_body(self, blk: ir.Block, scope: _Scope) -> None:
        """The statements of a 16-lane loop's step, twice: all 16 lanes, and (the last
        step) the lanes before the loop's bound, loaded and stored under a mask."""
        _, _, bound = self.vec
        left = f"({bound}) - {scope.idxs[loop_indexes(blk)[-1].name]}"
        self.emit(f"if ({left} >= 16) {{")
        self.depth += 1
        for st in blk.stmts:
            self.vector_stmt(st, scope, None)
        self.depth -= 1
        self.emit("} else {")
        self.depth += 1
        self.emit(f"const plait_m16 plait_m = (plait_m16)((1u << ({left})) - 1u);")
        for st in blk.stmts:
            self.vector_stmt(st, scope, "plait_m")
        self.depth -= 1
        self.emit("}")

    def vector_stmt(self, st, scope: _Scope, mask: str | None) -> None:
        """One statement of a 16-lane loop on ``plait_v16f`` values (``mask``: the lanes
        to load and store, None for all)."""
        strides = self.vec[1]
        if isinstance(st, ir.Load):
            cv = scope.views[st.from_][0]
            expr = (f"plait_v16_set1({cv}[0])" if strides[st.from_] == 0 else
                    f"plait_v16_load_m({cv}, {mask})" if mask else f"plait_v16_load({cv})")
            name = _cname(st.into, self.depth, "s_")
            self.emit(f"const plait_v16f {name} = {expr};")
            scope.scalars[st.into] = (name, "f32")
        elif isinstance(st, ir.Store):
            cv, val = scope.views[st.into][0], scope.scalars[st.from_][0]
            self.emit(f"plait_v16_store_m({cv}, {val}, {mask});" if mask
                      else f"plait_v16_store({cv}, {val});")
        elif isinstance(st, ir.Constant):
            name = _cname(st.into, self.depth, "s_")
            self.emit(f"const plait_v16f {name} = plait_v16_set1({literal(st.value, 'f32')});")
            scope.scalars[st.into] = (name, "f32")
        else:
            (out,) = st.outputs
            expr = by_intrinsic(st.name).cpu_v16.format(*(scope.scalars[i][0] for i in st.inputs))
            name = _cname(out, self.depth, "s_")
            self.emit(f"const plait_v16f {name} = {expr};")
            scope.scalars[out] = (name, "f32")

    def reduction_pragma(self, clauses: list) -> None:
        """An OpenMP ``simd`` reduction over the register accumulators."""
        self.emit(f"#pragma omp simd {' '.join(clauses)}")

    def special_block(self, blk: ir.Block, parent: _Scope) -> bool:
        """A ``mac_regblock`` becomes the register-block micro-kernel."""
        if "mac_regblock" not in blk.tags:
            return False
        mac = _mac_layout(blk, parent)
        if mac is not None:
            self.micro_kernel(blk.name, mac, parent)
        return mac is not None

    def micro_kernel(self, name: str, m: "_Mac", parent: _Scope) -> None:
        """``O[r, c] += A[k, r] * B[k, c]`` with the register block held in GNU C vector
        variables (``m`` from :func:`_mac_layout`)."""
        ct, vl, nv = C_TYPES[m.dt], m.vl, m.nr // m.vl
        vt = f"plait_v{vl}{m.dt}"
        self.emit(f"{{ /* {name}: {m.mr}x{m.nr} register block, k = {m.kc} */")
        self.depth += 1
        self.emit(f"typedef {ct} {vt} __attribute__((vector_size({vl * m.item})));")
        po, pa, pb = (parent.views[x.from_][0] for x in (m.o, m.a, m.b))
        accs = [(i, v, f"acc_{i}_{v}", f"{po} + {i * m.so_r + v * vl}")
                for i in range(m.mr) for v in range(nv)]
        for _, _, acc, at in accs:
            self.emit(f"{vt} {acc}; memcpy(&{acc}, {at}, sizeof({vt}));")
        self.emit(f"for (int64_t kk = 0; kk < {m.kc}; ++kk) {{")
        self.depth += 1
        self.emit(f"const {ct} *restrict pa = {pa} + kk*{m.sa_k};")
        self.emit(f"const {ct} *restrict pb = {pb} + kk*{m.sb_k};")
        for v in range(nv):
            self.emit(f"{vt} b_{v}; memcpy(&b_{v}, pb + {v * vl}, sizeof({vt}));")
        for i in range(m.mr):
            self.emit(f"{{ const {ct} s = pa[{i * m.sa_r}];")
            for v in range(nv):
                self.emit(f"  acc_{i}_{v} += s * b_{v};")
            self.emit("}")
        self.depth -= 1
        self.emit("}")
        for _, _, acc, at in accs:
            self.emit(f"memcpy({at}, &{acc}, sizeof({vt}));")
        self.depth -= 1
        self.emit("}")

    def render(self) -> str:
        """The whole function's source."""
        if self.timed:
            n = sum(isinstance(st, ir.Block) for st in self.p.entry.stmts)
            self.emit(f"static double {self.fn}_t[{max(n, 1)}];")
            self.emit(f"PLAIT_KERNEL double *{self.fn}_times(void) {{ return {self.fn}_t; }}")
        attr = "PLAIT_KERNEL_WIDE" if elementwise_only(self.p) else "PLAIT_KERNEL"
        self.emit(f"{attr} int64_t {self.fn}(void **bufs) {{")
        self.depth += 1
        self.emit("int64_t plait_status = 0;   /* shared by every OpenMP thread */")
        scope = _Scope()
        dead_fill = {r.from_ for r in self.p.entry.refs if "overwritten" in r.tags}
        for k, b in enumerate(self.p.buffers):
            ctype = self.types[b.dtype]
            cv = f"b_{k}"
            self.emit(f"{ctype} *{self.restrict(b.name)}{cv} = ({ctype} *)bufs[{k}];")
            scope.views[b.name] = (cv, b.dtype, b.init)
            scope.roots[b.name] = b.name
            if b.kind != "in" and b.name not in dead_fill:
                n = math.prod(b.shape)
                ident = _identity(b.init, b.dtype)
                if ident in ("0", "0.0", "0.0f", "0LL", "0ULL"):
                    self.emit(f"memset({cv}, 0, sizeof({ctype}) * {n});")
                else:
                    self.emit(f"for (int64_t z = 0; z < {n}; ++z) {cv}[z] = {ident};")
        self.block(self.p.entry, scope)
        self.emit("return plait_status;")
        self.depth -= 1
        self.emit("}")
        return "\n".join(self.lines)


_MAP_STATEMENTS = (ir.Load, ir.Store, ir.Constant, ir.Intrinsic)


def elementwise_only(program: ir.Program) -> bool:
    """Whether every block of ``program`` is an elementwise map: blocks tagged
    ``eltwise`` and not ``contraction``, without constraints, accumulating refinements or
    statements other than loads, stores, constants, intrinsics and such blocks. These
    kernels are auto-vectorized at the target's full width (``PLAIT_KERNEL_WIDE``); the
    rest stay at 256 bits (see the prelude)."""
    def map_block(blk: ir.Block) -> bool:
        return ("eltwise" in blk.tags and "contraction" not in blk.tags
                and not blk.constraints
                and all(r.agg in (None, "assign") for r in blk.refs)
                and all(map_block(st) if isinstance(st, ir.Block)
                        else isinstance(st, _MAP_STATEMENTS) for st in blk.stmts))
    top = program.entry.stmts
    return bool(top) and all(isinstance(st, ir.Block) and map_block(st) for st in top)


def vector_loop(blk: ir.Block, roots: dict[str, str]) -> dict[str, int] | None:
    """Each view's element stride (0 or 1) along ``blk``'s innermost loop when the block
    can run as 16-lane float32 vector code (:meth:`CpuRenderer.block`), else None: a leaf
    map (no constraints, no aggregating views; a fused kernel's inner block too) of
    float32 loads, stores, constants and intrinsics with a 16-lane spelling
    (``ElementwiseOp.cpu_v16``), at least one of them plait's own vector math (an op
    with a CPU helper: exp, tanh, logistic; plain arithmetic GCC vectorizes as well on
    its own), reading and writing its own views, which move by one element or stay put
    along the loop (the stored ones move), in independent iterations
    (:func:`independent_iterations`)."""
    loops = loop_indexes(blk)
    if (not loops or blk.constraints
            or not all(isinstance(st, _MAP_STATEMENTS) for st in blk.stmts)):
        return None
    intrinsics = [st for st in blk.stmts if isinstance(st, ir.Intrinsic)]
    ops = [by_intrinsic(st.name) for st in intrinsics]
    if (any(op is None or op.cpu_v16 is None for op in ops)
            or any(st.dtype not in (None, "f32") for st in intrinsics)
            or any(st.dtype != "f32" for st in blk.stmts if isinstance(st, ir.Constant))
            or not any(op.cpu_helper for op in ops)):
        return None
    v = loops[-1].name
    strides = {}
    for r in blk.refs:
        if r.dtype != "f32" or r.from_ is None or r.agg not in (None, "assign"):
            return None
        strides[r.into] = sum(a.coeff(v) * st for a, st in zip(r.access, r.strides))
    stored = {st.into for st in blk.stmts if isinstance(st, ir.Store)}
    loaded = {st.from_ for st in blk.stmts if isinstance(st, ir.Load)}
    if (not (stored | loaded) <= strides.keys() or any(s not in (0, 1) for s in strides.values())
            or any(strides[n] != 1 for n in stored) or not independent_iterations(blk, v, roots)):
        return None
    return strides


def independent_iterations(blk: ir.Block, v: str, roots: dict[str, str]) -> bool:
    """Whether the iterations of ``blk``'s innermost loop over ``v`` touch memory
    independently, so the loop may run as SIMD without the compiler's overlap checks
    (``#pragma GCC ivdep``; past about ten pointers GCC gives up those run-time checks
    and leaves the loop scalar: a fused Adam update, 1.85 -> 1.23 ms per call).

    ``roots`` gives the allocation each parent view points into. Every statement of
    the block reads or writes the element at its views' origin, so an iteration
    touches one element per view. The block must be a leaf without temporaries, and
    each allocation it writes must be reached through one parent view, at one
    address per iteration that moves with ``v``: then an element written in one
    iteration is touched in no other. Different allocations never overlap where one
    is written: a kernel's output buffers are fresh or a donated argument whose last
    use came before the kernel (``NativeExecutable.alias_plan``), drivers copy an
    input returned as an output, and loop carries ping-pong between two buffers; an
    array passed twice is only read."""
    if any(isinstance(st, (ir.Block, ir.Special)) for st in blk.stmts):
        return False
    if any(r.from_ is None or r.from_ not in roots for r in blk.refs):
        return False
    written = {roots[r.from_] for r in blk.refs if r.dir in ("out", "inout")}
    for root in written:
        refs = [r for r in blk.refs if roots[r.from_] == root]
        first = refs[0]
        if any((r.from_, r.access, r.strides) != (first.from_, first.access, first.strides)
               for r in refs[1:]) or _flat(first, v) == 0:
            return False
    return True


@dataclass(frozen=True)
class _Mac:
    """A ``mac_regblock``'s roles: output ``o`` and inputs ``a``/``b``, ranges of its
    ``k``/``r``/``c`` indexes, the strides the micro-kernel steps by, vector length."""

    o: ir.Refinement
    a: ir.Refinement
    b: ir.Refinement
    dt: str
    item: int
    vl: int
    kc: int
    mr: int
    nr: int
    so_r: int
    sa_k: int
    sa_r: int
    sb_k: int


def _flat(r: ir.Refinement, n: str) -> int:
    """Element stride of view ``r`` along index ``n``."""
    return sum(a.coeff(n) * st for a, st in zip(r.access, r.strides))


def _mac_layout(blk: ir.Block, parent: _Scope) -> _Mac | None:
    """The roles of a ``mac_regblock`` (``[k, r, c]``: ``O[r, c] += A[k, r] * B[k, c]``),
    or None if the block has another shape."""
    if len(blk.idxs) != 3 or blk.constraints or any(i.affine is not None for i in blk.idxs):
        return None
    simd = [t for t in blk.tags if t.startswith("simd_")]
    outs = [r for r in blk.refs if r.dir == "out" and r.agg == "add"]
    ins = [r for r in blk.refs if r.dir == "in"]
    st = blk.stmts
    if (len(simd) != 1 or len(outs) != 1 or len(ins) != 2 or len(st) != 4
            or not (isinstance(st[0], ir.Load) and isinstance(st[1], ir.Load)
                    and isinstance(st[2], ir.Intrinsic) and st[2].name == "mul"
                    and isinstance(st[3], ir.Store) and st[3].into == outs[0].into)):
        return None
    o, dt = outs[0], outs[0].dtype
    if dt not in ("f32", "f64") or any(r.dtype != dt for r in blk.refs):
        return None
    item = np.dtype(ir.np_dtype(dt)).itemsize
    names = blk.idx_names
    ks = [n for n in names if _flat(o, n) == 0]
    cs = [n for n in names if n not in ks and _flat(o, n) == 1]
    if len(ks) != 1 or len(cs) != 1:
        return None
    k, c = ks[0], cs[0]
    r = [n for n in names if n not in (k, c)][0]
    a = [x for x in ins if _flat(x, c) == 0]
    b = [x for x in ins if _flat(x, c) == 1 and _flat(x, r) == 0]
    if len(a) != 1 or len(b) != 1 or a[0] is b[0]:
        return None
    a, b = a[0], b[0]
    kc, mr, nr = (blk.idx(n).range for n in (k, r, c))
    vl = int(simd[0][5:]) // item
    if nr % vl or vl < 2 or any(any(t.const for t in x.access) or x.from_ not in parent.views
                                for x in (o, a, b)):
        return None
    return _Mac(o, a, b, dt, item, vl, kc, mr, nr, _flat(o, r), _flat(a, k), _flat(a, r),
                _flat(b, k))


def temp_bytes(program: ir.Program, threads: int = 1) -> int:
    """Peak bytes of the temporaries the rendered function allocates (``none``
    refinements, on the heap or the stack): a block's own temporaries live while its
    nested blocks run; the outermost ``parallel`` block holds one set per thread."""
    def peak(blk: ir.Block, in_parallel: bool) -> int:
        own = sum(temp_elements(r) * np.dtype(ir.np_dtype(r.dtype)).itemsize
                  for r in blk.refs if r.from_ is None)
        loops = loop_indexes(blk)
        par = ("parallel" in blk.tags and blk.iterations > 1 and not in_parallel
               and bool(loops))
        inner = max((peak(st, in_parallel or par) for st in blk.stmts
                     if isinstance(st, ir.Block)), default=0)
        return (own + inner) * (min(threads, loops[0].range) if par else 1)
    return peak(program.entry, False)


def render_program(program: ir.Program, fn_name: str, timed: bool = False,
                   where: int = 0, shared: frozenset = frozenset()) -> str:
    """C source (without the prelude) of ``program`` as function ``fn_name``; ``timed``
    adds per-block timers read through ``double *<fn_name>_times(void)``; ``where`` is
    the function's number in the allocation-failure status it returns; pointers into
    the ``shared`` buffers (an output the caller may pass in an input's memory) are not
    ``restrict``."""
    return CpuRenderer(program, fn_name, timed, where, shared).render()
