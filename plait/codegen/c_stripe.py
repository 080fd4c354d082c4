"""Render a Stripe program as one C function (loops, OpenMP pragmas, scalar code).

The function is ``int64_t <name>(void **bufs)`` with one pointer per program buffer,
in the program's buffer order. It returns 0, or an allocation-failure status
(:func:`oom_status`) when a temporary could not be allocated: every ``malloc`` is
checked, a block whose temporaries are missing skips its statements, and a failure
inside an OpenMP loop is recorded in a shared status word (the loop runs to its end
and frees what it allocated; the results are then garbage and the caller discards
them). Semantics follow ``plait.stripe.ir``: a block is a
loop nest over its indexes, skipping iterations that fail a constraint; a
refinement is a pointer offset into its parent view; a ``none`` refinement is a
fresh allocation filled with the identity of its aggregation op (unless tagged
``overwritten``: its first user assigns every element); a store combines
with the refinement's aggregation op. Blocks tagged ``parallel`` get an OpenMP
``parallel for`` on their outermost loop. Integer division, remainder and shifts
are guarded so no input can trap.
"""
from __future__ import annotations

import math
import re

import numpy as np

from plait.codegen.c_expr import (C_TYPES, COMPUTE_TYPES, FLOAT_DTYPES, arith, cast, literal,
                                  intrinsic as c_intrinsic)
from plait.errors import CompileError
from plait.stripe import ir
from plait.tile.affine import Affine

# local allocations up to this size live on the stack (OpenMP threads have >= 2 MB)
STACK_BYTES = 32 * 1024

# an allocation-failure status is bytes * OOM_WHERE + where (1-based function number,
# 0 for a driver's intermediate buffer); 0 means success
OOM_WHERE = 4096


def oom_status(nbytes: int, where: int) -> int:
    """The status a generated function returns when ``nbytes`` cannot be allocated in
    function number ``where`` (0: a driver's intermediate buffer)."""
    return max(int(nbytes), 1) * OOM_WHERE + min(max(int(where), 0), OOM_WHERE - 1)


def decode_status(status: int) -> tuple[int, int]:
    """``(bytes, where)`` of a nonzero status returned by generated code."""
    return status // OOM_WHERE, status % OOM_WHERE

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
#define F32(x) ((float)(x))
static inline float plait_maxf(float a, float b) { return (a != a || a >= b) ? a : b; }
static inline float plait_minf(float a, float b) { return (a != a || a <= b) ? a : b; }
static inline double plait_max(double a, double b) { return (a != a || a >= b) ? a : b; }
static inline double plait_min(double a, double b) { return (a != a || a <= b) ? a : b; }
static inline int64_t plait_floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline int64_t plait_ceildiv(int64_t a, int64_t b) { return -plait_floordiv(-a, b); }
static inline int64_t plait_imax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t plait_imin(int64_t a, int64_t b) { return a < b ? a : b; }
/* record a failed allocation (any thread, inside or outside an OpenMP region) */
static inline void plait_oom(int64_t *status, int64_t code) { __atomic_store_n(status, code, __ATOMIC_RELAXED); }
/* auto-vectorized loops use 256-bit vectors: GCC 12.2 at -O3 -march=native with 512-bit
   auto-vectorization computed a wrong value in a fused pad/diff/reduce kernel (the jit(grad)
   case in tests/native/test_native_vector_width.py); explicit vector types still use the
   target's full width */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PLAIT_KERNEL __attribute__((target("prefer-vector-width=256")))
#else
#define PLAIT_KERNEL
#endif
/* float register sums start at -0.0, the identity of IEEE addition (OpenMP's + uses +0.0) */
#pragma omp declare reduction(plait_addf : float : omp_out = omp_out + omp_in) initializer(omp_priv = -0.0f)
#pragma omp declare reduction(plait_addd : double : omp_out = omp_out + omp_in) initializer(omp_priv = -0.0)
"""


def _cname(name: str, depth: int, prefix: str) -> str:
    return f"{prefix}{re.sub(r'[^A-Za-z0-9_]', '_', name)}_{depth}"


def _identity(agg: str | None, dtype: str) -> str:
    return literal(ir.agg_identity(agg, dtype).item(), dtype)


class _Scope:
    """Names visible in one block: views (pointer, dtype), indexes, scalars (name, dtype)."""

    def __init__(self, parent: "_Scope | None" = None):
        self.views: dict[str, tuple[str, str, tuple]] = dict(parent.views) if parent else {}
        # refinements refine the PARENT's views, even when they reuse a parent's name
        self.outer: dict[str, tuple[str, str, tuple]] = parent.views if parent else {}
        self.idxs: dict[str, str] = {}
        self.scalars: dict[str, tuple[str, str]] = {}
        # views reduced over the innermost loop: name -> (accumulator, NaN flag or None)
        self.reductions: dict[str, tuple[str, str | None]] = {}


class CRenderer:
    """Renders one Stripe program to C source."""

    def __init__(self, program: ir.Program, fn_name: str, timed: bool = False,
                 where: int = 0):
        self.p = program
        self.fn = fn_name
        self.timed = timed     # accumulate each top-level block's time in <fn>_t[]
        self.where = where     # this function's number in allocation-failure statuses
        self.lines: list[str] = []
        self.depth = 0

    def emit(self, s: str) -> None:
        self.lines.append("  " * self.depth + s)

    # --- expressions ---------------------------------------------------------------
    def affine(self, a: Affine, scope: _Scope) -> str:
        parts = []
        for n, c in a.terms:
            if n not in scope.idxs:
                raise CompileError(f"Stripe index {n!r} is not visible in its block", locate=False)
            v = scope.idxs[n]
            parts.append(v if c == 1 else f"{c}*{v}" if c >= 0 else f"({c})*{v}")
        if a.const or not parts:
            parts.append(f"({a.const})")
        return "(" + " + ".join(parts) + ")"

    def intrinsic(self, st: ir.Intrinsic, scope: _Scope) -> tuple[str, str]:
        args = [scope.scalars[i] for i in st.inputs]
        return c_intrinsic(st.name, [a[0] for a in args], [a[1] for a in args], st.dtype)

    # --- blocks -------------------------------------------------------------------------
    def block(self, blk: ir.Block, parent: _Scope) -> None:
        if "mac_regblock" in blk.tags and self.micro_kernel(blk, parent):
            return
        scope = _Scope(parent)
        d = self.depth
        opened = 0
        if blk.comments:
            self.emit(f"/* {blk.name}: {' '.join(blk.comments)[:200].replace('*/', '')} */")
        self.emit("{")
        self.depth += 1
        # passed-in indexes (range 1 with an offset) are constants of the iteration
        loops = []
        for idx in blk.idxs:
            if idx.range == 1 and idx.affine is not None:
                cv = _cname(idx.name, self.depth, "i_")
                self.emit(f"const int64_t {cv} = {self.affine(idx.affine, parent)};")
                scope.idxs[idx.name] = cv
            else:
                loops.append(idx)
        loop_names = [i.name for i in loops]
        bounds: dict[str, list] = {n: [] for n in loop_names}
        checks: dict[int, list] = {}
        for c in blk.constraints:
            lv = [n for n in c.vars if n in bounds]
            if len(lv) == 1:
                bounds[lv[0]].append(c)
            else:
                pos = max((loop_names.index(n) + 1 for n in lv), default=0)
                checks.setdefault(pos, []).append(c)
        guarded = bool(checks.get(0))
        if guarded:
            conds = " && ".join(f"{self.affine(c, scope)} >= 0" for c in checks[0])
            self.emit(f"if ({conds}) {{")
        parallel = "parallel" in blk.tags and blk.iterations > 1
        for k, idx in enumerate(loops):
            cv = _cname(idx.name, self.depth, "i_")
            base = self.affine(idx.affine, parent) if idx.affine is not None else "0"
            lo, hi = base, f"{base} + {idx.range}" if base != "0" else str(idx.range)
            for c in bounds[idx.name]:
                coef = c.coeff(idx.name)
                rest = self.affine(c - Affine(((idx.name, coef),)), scope)
                if coef > 0:
                    lo = f"plait_imax({lo}, {'-' + rest if coef == 1 else f'plait_ceildiv(-{rest}, {coef})'})"
                else:
                    lim = rest if coef == -1 else f"plait_floordiv({rest}, {-coef})"
                    hi = f"plait_imin({hi}, {lim} + 1)"
            if k == 0 and parallel:
                self.emit("#pragma omp parallel for schedule(static)")
            elif k == len(loops) - 1:
                self.reduction_prologue(blk, idx.name, scope)
            self.emit(f"for (int64_t {cv} = {lo}; {cv} < {hi}; ++{cv}) {{")
            scope.idxs[idx.name] = cv
            self.depth += 1
            opened += 1
            if checks.get(k + 1):
                conds = " && ".join(f"{self.affine(c, scope)} >= 0" for c in checks[k + 1])
                self.emit(f"if (!({conds})) continue;")
        frees = []
        fills = []
        for r in blk.refs:
            if r.into in scope.reductions:
                continue
            cv = _cname(r.into, self.depth, "v_")
            ctype = C_TYPES[r.dtype]
            if r.from_ is None:
                size = temp_elements(r)
                nbytes = size * np.dtype(ir.np_dtype(r.dtype)).itemsize
                if nbytes <= STACK_BYTES:
                    self.emit(f"{ctype} {cv}[{size}];")
                else:
                    self.emit(f"{ctype} *{cv} = ({ctype} *)malloc(sizeof({ctype}) * {size});")
                    self.emit(f"if (!{cv}) plait_oom(&plait_status, "
                              f"{oom_status(nbytes, self.where)}LL);")
                    frees.append(cv)
                if "overwritten" not in r.tags:
                    fills.append(f"for (int64_t z = 0; z < {size}; ++z) {cv}[z] = "
                                 f"{_identity(r.agg, r.dtype)};")
            else:
                if r.from_ not in scope.outer:
                    raise CompileError(f"refinement {r.into!r} refines unknown view {r.from_!r}",
                                       locate=False)
                pv = scope.outer[r.from_][0]
                off = " + ".join(f"{self.affine(a, scope)}*{st}"
                                 for a, st in zip(r.access, r.strides)) or "0"
                self.emit(f"{ctype} *restrict {cv} = {pv} + {off};")
            scope.views[r.into] = (cv, r.dtype, r.agg)
        if frees:      # a block whose temporaries are missing does nothing
            self.emit(f"if ({' && '.join(frees)}) {{")
            self.depth += 1
        for line in fills:
            self.emit(line)
        timer = 0
        for st in blk.stmts:
            if self.timed and blk is self.p.entry and isinstance(st, ir.Block):
                self.emit("{ double t_ = plait_now();")
                self.stmt(st, scope)
                self.emit(f"{self.fn}_t[{timer}] += plait_now() - t_; }}")
                timer += 1
            else:
                self.stmt(st, scope)
        if frees:
            self.depth -= 1
            self.emit("}")
        for cv in frees:
            self.emit(f"free({cv});")
        for k in range(opened):
            self.depth -= 1
            self.emit("}")
            if k == 0 and scope.reductions:
                self.reduction_epilogue(scope)
        if guarded:
            self.emit("}")
        self.depth -= 1
        self.emit("}")
        assert self.depth == d

    def reduction_prologue(self, blk: ir.Block, v: str, scope: _Scope) -> None:
        """Before the innermost loop ``v``: accumulate views that ``v`` does not address in
        registers, with an OpenMP ``simd`` reduction (any order is legal: the block's
        iterations are unordered and the aggregation is commutative)."""
        if any(isinstance(st, (ir.Block, ir.Special)) for st in blk.stmts):
            return
        loaded = {st.from_ for st in blk.stmts if isinstance(st, ir.Load)}
        stored = [st.into for st in blk.stmts if isinstance(st, ir.Store)]
        clauses = []
        for r in blk.refs:
            if (r.dir not in ("out", "inout") or r.agg not in ("add", "max", "min", "mul")
                    or r.from_ is None or r.into in loaded or stored.count(r.into) != 1
                    or any(a.coeff(v) for a in r.access) or r.dtype in ("bool", "f16")):
                continue
            if any(n not in scope.idxs for a in r.access for n in a.vars):
                continue
            cv = _cname(r.into, self.depth, "v_")
            ctype = C_TYPES[r.dtype]
            pv = scope.outer[r.from_][0]
            off = " + ".join(f"{self.affine(a, scope)}*{st}" for a, st in zip(r.access, r.strides)) or "0"
            self.emit(f"{ctype} *restrict {cv} = {pv} + {off};")
            scope.views[r.into] = (cv, r.dtype, r.agg)
            acc = _cname(r.into, self.depth, "racc_")
            # a float sum's register accumulator starts at -0.0, the identity of IEEE
            # addition, so the memory value it is added to decides the sign of zero
            init = literal(-0.0, r.dtype) if r.agg == "add" and r.dtype in FLOAT_DTYPES else \
                _identity(r.agg, r.dtype)
            self.emit(f"{COMPUTE_TYPES[r.dtype]} {acc} = {init};")
            nan = None
            op = {"add": "+", "mul": "*", "max": "max", "min": "min"}[r.agg]
            if r.agg == "add" and r.dtype in ("f32", "f64"):
                op = "plait_addf" if r.dtype == "f32" else "plait_addd"
            clauses.append(f"reduction({op}:{acc})")
            if r.agg in ("max", "min") and r.dtype in FLOAT_DTYPES:
                nan = _cname(r.into, self.depth, "rnan_")
                self.emit(f"int {nan} = 0;")
                clauses.append(f"reduction(|:{nan})")
            scope.reductions[r.into] = (acc, nan)
        if clauses:
            self.emit(f"#pragma omp simd {' '.join(clauses)}")

    def reduction_epilogue(self, scope: _Scope) -> None:
        """After the innermost loop: combine each register accumulator into memory once."""
        for name, (acc, nan) in scope.reductions.items():
            cv, dt, agg = scope.views[name]
            val = f"({nan} ? NAN : {acc})" if nan else acc
            if agg in ("add", "mul"):
                op = "+" if agg == "add" else "*"
                self.emit(f"{cv}[0] = {cv}[0] {op} {val};")
            else:
                self.emit(f"{cv}[0] = {arith(agg, [cv + '[0]', val], dt)};")

    def micro_kernel(self, blk: ir.Block, parent: _Scope) -> bool:
        """Render a ``mac_regblock`` (``[k, r, c]``: ``O[r, c] += A[k, r] * B[k, c]``) with
        the register block held in GNU C vector variables; False if the shape differs."""
        if len(blk.idxs) != 3 or blk.constraints or any(i.affine is not None for i in blk.idxs):
            return False
        simd = [t for t in blk.tags if t.startswith("simd_")]
        outs = [r for r in blk.refs if r.dir == "out" and r.agg == "add"]
        ins = [r for r in blk.refs if r.dir == "in"]
        if len(simd) != 1 or len(outs) != 1 or len(ins) != 2 or len(blk.stmts) != 4:
            return False
        o = outs[0]
        dt = o.dtype
        if dt not in ("f32", "f64") or any(r.dtype != dt for r in blk.refs):
            return False
        item = np.dtype(ir.np_dtype(dt)).itemsize
        vl = int(simd[0][5:]) // item

        def fc(r, n):
            return sum(a.coeff(n) * st for a, st in zip(r.access, r.strides))

        names = blk.idx_names
        kx = [n for n in names if fc(o, n) == 0]
        if len(kx) != 1:
            return False
        k = kx[0]
        c = [n for n in names if n != k and fc(o, n) == 1]
        if len(c) != 1:
            return False
        c = c[0]
        r = [n for n in names if n not in (k, c)][0]
        a = [x for x in ins if fc(x, c) == 0]
        b = [x for x in ins if fc(x, c) == 1 and fc(x, r) == 0]
        if len(a) != 1 or len(b) != 1 or a[0] is b[0]:
            return False
        a, b = a[0], b[0]
        kc, mr, nr = (blk.idx(n).range for n in (k, r, c))
        if nr % vl or vl < 2:
            return False
        nv = nr // vl
        st = blk.stmts
        if not (isinstance(st[0], ir.Load) and isinstance(st[1], ir.Load) and isinstance(st[2], ir.Intrinsic)
                and st[2].name == "mul" and isinstance(st[3], ir.Store) and st[3].into == o.into):
            return False
        for x in (o, a, b):
            if any(t.const for t in x.access) or x.from_ not in parent.views:
                return False
        ct = C_TYPES[dt]
        vt = f"plait_v{vl}{dt}"
        self.emit(f"{{ /* {blk.name}: {mr}x{nr} register block, k = {kc} */")
        self.depth += 1
        self.emit(f"typedef {ct} {vt} __attribute__((vector_size({vl * item})));")
        po, pa, pb = (parent.views[x.from_][0] for x in (o, a, b))
        so_r, sa_k, sa_r, sb_k = fc(o, r), fc(a, k), fc(a, r), fc(b, k)
        for i in range(mr):
            for v in range(nv):
                self.emit(f"{vt} acc_{i}_{v}; memcpy(&acc_{i}_{v}, {po} + {i * so_r + v * vl}, sizeof({vt}));")
        self.emit(f"for (int64_t kk = 0; kk < {kc}; ++kk) {{")
        self.depth += 1
        self.emit(f"const {ct} *restrict pa = {pa} + kk*{sa_k};")
        self.emit(f"const {ct} *restrict pb = {pb} + kk*{sb_k};")
        for v in range(nv):
            self.emit(f"{vt} b_{v}; memcpy(&b_{v}, pb + {v * vl}, sizeof({vt}));")
        for i in range(mr):
            self.emit(f"{{ const {ct} s = pa[{i * sa_r}];")
            for v in range(nv):
                self.emit(f"  acc_{i}_{v} += s * b_{v};")
            self.emit("}")
        self.depth -= 1
        self.emit("}")
        for i in range(mr):
            for v in range(nv):
                self.emit(f"memcpy({po} + {i * so_r + v * vl}, &acc_{i}_{v}, sizeof({vt}));")
        self.depth -= 1
        self.emit("}")
        return True

    def stmt(self, st, scope: _Scope) -> None:
        if isinstance(st, ir.Block):
            self.block(st, scope)
            return
        if isinstance(st, ir.Load):
            cv, dt, _ = scope.views[st.from_]
            name = _cname(st.into, self.depth, "s_")
            self.emit(f"{COMPUTE_TYPES[dt]} {name} = {cv}[0];")
            scope.scalars[st.into] = (name, dt)
        elif isinstance(st, ir.Store):
            cv, dt, agg = scope.views[st.into]
            val, sdt = scope.scalars[st.from_]
            if sdt != dt:
                val = cast(val, dt)
            if st.into in scope.reductions:
                acc, nan = scope.reductions[st.into]
                if agg in ("add", "mul"):
                    self.emit(f"{acc} = {acc} {'+' if agg == 'add' else '*'} {val};")
                else:
                    cmp = ">" if agg == "max" else "<"
                    self.emit(f"{{ const {COMPUTE_TYPES[dt]} rv = {val}; {acc} = rv {cmp} {acc} ? rv : {acc};"
                              + (f" {nan} |= (rv != rv); }}" if nan else " }"))
                return
            if agg in (None, "assign"):
                self.emit(f"{cv}[0] = {val};")
            elif agg == "add":
                self.emit(f"{cv}[0] = {'(' + cv + '[0] | ' + val + ')' if dt == 'bool' else cv + '[0] + ' + val};")
            elif agg == "mul":
                self.emit(f"{cv}[0] = {'(' + cv + '[0] & ' + val + ')' if dt == 'bool' else cv + '[0] * ' + val};")
            elif agg in ("max", "min"):
                self.emit(f"{cv}[0] = {arith(agg, [cv + '[0]', val], dt)};")
            else:
                raise CompileError(f"unknown aggregation {agg!r}", locate=False)
        elif isinstance(st, ir.Constant):
            name = _cname(st.into, self.depth, "s_")
            self.emit(f"const {COMPUTE_TYPES[st.dtype]} {name} = {literal(st.value, st.dtype)};")
            scope.scalars[st.into] = (name, st.dtype)
        elif isinstance(st, ir.LoadIndex):
            name = _cname(st.into, self.depth, "s_")
            self.emit(f"const {COMPUTE_TYPES[st.dtype]} {name} = "
                      f"({COMPUTE_TYPES[st.dtype]}){self.affine(st.expr, scope)};")
            scope.scalars[st.into] = (name, st.dtype)
        elif isinstance(st, ir.Intrinsic):
            expr, dt = self.intrinsic(st, scope)
            if dt == "f16":   # float16 math runs in float; round each op's result as NumPy does
                expr = f"((float)(_Float16)({expr}))"
            (out,) = st.outputs
            name = _cname(out, self.depth, "s_")
            self.emit(f"const {COMPUTE_TYPES[dt]} {name} = {expr};")
            scope.scalars[out] = (name, dt)
        else:
            raise CompileError(f"Stripe statement {type(st).__name__} ({getattr(st, 'name', '')}) "
                               f"has no C rendering", locate=False)

    def render(self) -> str:
        if self.timed:
            n = sum(isinstance(st, ir.Block) for st in self.p.entry.stmts)
            self.emit(f"static double {self.fn}_t[{max(n, 1)}];")
            self.emit(f"PLAIT_KERNEL double *{self.fn}_times(void) {{ return {self.fn}_t; }}")
        self.emit(f"PLAIT_KERNEL int64_t {self.fn}(void **bufs) {{")
        self.depth += 1
        self.emit("int64_t plait_status = 0;   /* shared by every OpenMP thread */")
        scope = _Scope()
        dead_fill = {r.from_ for r in self.p.entry.refs if "overwritten" in r.tags}
        for k, b in enumerate(self.p.buffers):
            ctype = C_TYPES[b.dtype]
            cv = f"b_{k}"
            self.emit(f"{ctype} *restrict {cv} = ({ctype} *)bufs[{k}];")
            scope.views[b.name] = (cv, b.dtype, b.init)
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


def temp_elements(r: ir.Refinement) -> int:
    """Elements of the fresh allocation a ``none`` refinement makes."""
    return 1 + sum((s - 1) * st for s, st in zip(r.shape, r.strides) if s > 0)


def temp_bytes(program: ir.Program, threads: int = 1) -> int:
    """Peak bytes of the temporaries the rendered function allocates (``none``
    refinements, on the heap or the stack): a block's own temporaries live while its
    nested blocks run; the outermost ``parallel`` block holds one set per thread."""
    def peak(blk: ir.Block, in_parallel: bool) -> int:
        own = sum(temp_elements(r) * np.dtype(ir.np_dtype(r.dtype)).itemsize
                  for r in blk.refs if r.from_ is None)
        loops = [i for i in blk.idxs if not (i.range == 1 and i.affine is not None)]
        par = ("parallel" in blk.tags and blk.iterations > 1 and not in_parallel
               and bool(loops))
        inner = max((peak(st, in_parallel or par) for st in blk.stmts
                     if isinstance(st, ir.Block)), default=0)
        return (own + inner) * (min(threads, loops[0].range) if par else 1)
    return peak(program.entry, False)


def render_program(program: ir.Program, fn_name: str, timed: bool = False,
                   where: int = 0) -> str:
    """C source (without the prelude) of ``program`` as function ``fn_name``; ``timed``
    adds per-block timers read through ``double *<fn_name>_times(void)``; ``where`` is
    the function's number in the allocation-failure status it returns."""
    return CRenderer(program, fn_name, timed, where).render()
