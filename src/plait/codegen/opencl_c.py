"""Render a Stripe program as OpenCL C kernels, one per top-level block.

A program becomes :class:`KernelSet`: launches of the prelude's ``plait_fill_<dtype>``
kernels (one per non-input buffer, filling it with its aggregation identity; shared by
every program, so a driver that generates code per kernel, like PoCL, does it once
per type) and ``<name>_<k>`` for each top-level block of the entry, enqueued in order on one in-order queue. Every
kernel takes the same arguments: the program's buffers, then its entry-level
temporaries (the runtime allocates those as device buffers), all ``__global``.
Indexes the ``threads`` pass chose (``threads_<n>``) become grid-stride loops over
``get_global_id(d)``/``get_global_size(d)``, so any NDRange covers the block;
other loops run inside a work-item. Temporaries inside a block are private arrays,
or, where the ``place`` pass put them in ``global`` memory, each work-item's slice of
a scratch buffer the kernel takes after the shared arguments.
Expressions, loops and views come from the C-family base; this prelude supplies the
names it uses (``int64_t``, ``expf``, ``plait_maxf``...) in OpenCL C.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from plait.codegen.c_expr import C_TYPES, SCALAR_HELPERS, op_helpers
from plait.codegen.c_stripe import CFamilyRenderer, _Scope, temp_elements
from plait.errors import CompileError
from plait.stripe import ir
from plait.stripe.ir import np_dtype
from plait.stripe.passes.threads import launch_shape

# OpenCL C has no _Bool buffers: booleans are stored as bytes
CL_TYPES = dict(C_TYPES, bool="uchar")
CL_STORAGE = {"bool": "u8"}     # the Stripe dtype of a storage type that differs

# OpenCL C overloads C99's math functions by argument type and has no f-suffixed
# names; the C-family expressions spell the float forms the C99 way
_C99_MATH = ("acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil",
             "copysign", "cos", "cosh", "erf", "erfc", "exp", "exp2", "expm1", "fabs",
             "floor", "fmax", "fmin", "fmod", "hypot", "lgamma", "log", "log10", "log1p",
             "log2", "nextafter", "pow", "rint", "round", "sin", "sinh", "sqrt", "tan",
             "tanh", "trunc")

# A device without cl_khr_fp64 (many GPUs) rejects any ``double`` in a program. Its
# float64 values run on the host (an unsupported dtype of its target), but the shared
# C helpers also define double forms (plait_max, plait_digamma...), which there
# compile as float: never called with double values, and digammaf then runs in float.
_HEADER = ("""#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#ifndef cl_khr_fp64
#define double float
#endif
typedef char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t;
typedef uchar uint8_t; typedef ushort uint16_t; typedef uint uint32_t; typedef ulong uint64_t;
#define INT64_MIN (-0x7fffffffffffffffL - 1)
""" + "".join(f"#define {f}f {f}\n" for f in _C99_MATH) + SCALAR_HELPERS)


def _fill_kernel(dt: str) -> str:
    t = CL_TYPES[dt]
    k = (f"__kernel void plait_fill_{dt}(__global {t} *restrict p, long n, {t} v) {{\n"
         f"  for (long z = get_global_id(0); z < n; z += get_global_size(0)) p[z] = v;\n}}\n")
    return f"#ifdef cl_khr_fp64\n{k}#endif\n" if dt == "f64" else k


# one per Stripe dtype stored on a device (float16 runs on the host)
_FILLS = "".join(_fill_kernel(dt) for dt in CL_TYPES if dt != "f16")


def prelude() -> str:
    """The OpenCL C every program starts with: fixed-width integer names, the C99 float
    math names, plait's min/max/division helpers, the helpers of the ops defined so
    far, and the fill kernels (``plait_fill_<dtype>(buffer, elements, value)``)."""
    return _HEADER + op_helpers() + _FILLS


@dataclass(frozen=True)
class Launch:
    """One kernel of a program: its name, work-item ranges, work-group shape, and the
    per-work-item scratch buffers ``(dtype, elements)`` it takes after the shared
    arguments (``global`` temporaries, one slice per work-item)."""

    name: str
    ranges: tuple
    group: tuple
    scratch: tuple = ()
    fill: tuple = ()    # a fill kernel's (argument index, elements, value as a NumPy scalar)

    def arguments(self, args: list, scratch: list) -> list:
        """The kernel's arguments: a fill's buffer, length and value; else the
        program's shared ``args`` and this launch's ``scratch`` buffers."""
        if self.fill:
            k, n, value = self.fill
            return [args[k], np.int64(n), value]
        return [*args, *scratch]

    @property
    def global_size(self) -> tuple:
        """The NDRange: each range rounded up to a whole number of groups (no group
        shape: the ranges, the driver choosing groups)."""
        if not self.group:
            return tuple(self.ranges) or (1,)
        return tuple(-(-r // g) * g for r, g in zip(self.ranges, self.group))

    def shape(self, limit: int | None = None) -> tuple:
        """``(NDRange, work-group shape or None)`` for a kernel that allows ``limit``
        work-items per group (a driver's kernel limit can be below the device's, for a
        kernel using many registers): a larger group is halved along its longest side
        until it fits, keeping the number of groups. Every loop over work-items strides
        by the local or global size, so any group shape computes the same values."""
        if not self.group:
            return self.global_size, None
        group = list(self.group)
        while limit and math.prod(group) > max(limit, 1):
            k = group.index(max(group))
            group[k] //= 2
        return (tuple(n // g * h for n, g, h in zip(self.global_size, self.group, group)),
                tuple(group))


@dataclass(frozen=True)
class KernelSet:
    """A program's OpenCL C: ``source``; ``temps`` (name, dtype, elements) are device
    buffers the caller allocates after the program's own; ``launches`` in order."""

    source: str
    temps: tuple
    launches: tuple


class OpenCLRenderer(CFamilyRenderer):
    """Renders one Stripe program as OpenCL C kernels."""

    def __init__(self, program: ir.Program, fn_name: str):
        super().__init__(program, fn_name)
        self.types = CL_TYPES
        self.kernel_block: ir.Block | None = None   # the top-level block being rendered
        self.threads = 0          # its work-item dimensions
        self.scratch: list = []   # its global temporaries: (argument, dtype, elements)
        self.local: list = []     # its local arrays: (dtype, elements)

    def open_loop(self, blk: ir.Block, loops: list, k: int, cv: str, rng: tuple,
                  scope: _Scope) -> None:
        """A thread index is a grid-stride loop over its NDRange dimension; an innermost
        loop reducing into views it does not address accumulates in registers."""
        lo, hi = rng
        if blk is self.kernel_block and k < self.threads:
            ids = ("group_id", "num_groups") if "workgroups" in blk.tags else \
                ("global_id", "global_size")
            self.emit(f"for (int64_t {cv} = {lo} + get_{ids[0]}({k}); {cv} < {hi}; "
                      f"{cv} += get_{ids[1]}({k})) {{")
            return
        if k < _items(blk):
            self.emit(f"for (int64_t {cv} = {lo} + get_local_id({k}); {cv} < {hi}; "
                      f"{cv} += get_local_size({k})) {{")
            return
        if k == len(loops) - 1:
            self.reduction_prologue(blk, loops[k].name, scope)
        super().open_loop(blk, loops, k, cv, rng, scope)

    def render(self) -> KernelSet:
        """The kernels' source, the temporaries to allocate and the launches."""
        entry = self.p.entry
        if not all(isinstance(s, ir.Block) for s in entry.stmts):
            raise CompileError(f"Stripe program {self.p.name}: top-level statements other "
                               f"than blocks have no OpenCL rendering", locate=False)
        temps = tuple((r.into, r.dtype, temp_elements(r)) for r in entry.refs
                      if r.from_ is None)
        args = [(f"b_{k}", b.dtype) for k, b in enumerate(self.p.buffers)]
        args += [(f"t_{k}", dt) for k, (_, dt, _) in enumerate(temps)]
        params = ", ".join(f"__global {CL_TYPES[dt]} *restrict {n}" for n, dt in args)
        launches = self._fills(temps)
        for k, blk in enumerate(entry.stmts):
            launches.append(self._kernel(f"{self.fn}_{k}", blk, params, temps))
        return KernelSet("\n".join(self.lines), temps, tuple(launches))

    def _kernel(self, name: str, blk: ir.Block, params: str, temps: tuple) -> Launch:
        """Render top-level block ``blk`` as kernel ``name``."""
        start = len(self.lines)
        self.depth += 1
        self.kernel_block, self.scratch, self.local = blk, [], []
        ranges, group = launch_shape(blk)
        self.threads = len(ranges)
        self.block(blk, self._entry_scope(temps))
        self.depth -= 1
        body = self.lines[start:]
        del self.lines[start:]
        extra = "".join(f", __global {CL_TYPES[dt]} *restrict {n}" for n, dt, _ in self.scratch)
        self.emit(f"__kernel void {name}({params}{extra}) {{")
        for k, (dt, n) in enumerate(self.local):
            self.emit(f"  __local {CL_TYPES[dt]} l_{k}[{n}];")
        if self.scratch:
            self.emit("  const int64_t plait_item = get_global_id(0) + get_global_size(0) * "
                      "(get_global_id(1) + get_global_size(1) * get_global_id(2));")
        self.lines += body
        self.emit("}")
        launch = Launch(name, ranges, group)
        items = math.prod(launch.global_size)
        return Launch(name, ranges, group, tuple((dt, n * items) for _, dt, n in self.scratch))

    def alloc_temp(self, r: ir.Refinement, cv: str, size: int, frees: list) -> str:
        """A ``global`` temporary is this work-item's slice of a scratch buffer; a
        ``local`` one, an array declared at the kernel's scope (OpenCL C allows
        ``__local`` variables nowhere else), shared by the work-group."""
        if r.location == "local":
            self.local.append((r.dtype, size))
            self.emit(f"__local {CL_TYPES[r.dtype]} *restrict {cv} = l_{len(self.local) - 1};")
            return "__local "
        if r.location != "global":
            return super().alloc_temp(r, cv, size, frees)
        arg = f"w_{len(self.scratch)}"
        self.scratch.append((arg, r.dtype, size))
        self.emit(f"__global {CL_TYPES[r.dtype]} *restrict {cv} = {arg} + plait_item * {size};")
        return "__global "

    def stmt(self, st, scope: _Scope) -> None:
        """A barrier waits for the work-group and makes its local writes visible."""
        if isinstance(st, ir.Barrier):
            self.emit("barrier(CLK_LOCAL_MEM_FENCE);")
        else:
            super().stmt(st, scope)

    def _entry_scope(self, temps: tuple) -> _Scope:
        """Views of the entry block: its refinements of the buffers and its temporaries."""
        scope = _Scope()
        for k, b in enumerate(self.p.buffers):
            scope.views[b.name] = (f"b_{k}", b.dtype, b.init)
            scope.quals[b.name] = "__global "
        inner = _Scope(scope)
        names = [t[0] for t in temps]
        for r in self.p.entry.refs:
            if r.from_ is None:
                inner.views[r.into] = (f"t_{names.index(r.into)}", r.dtype, r.agg)
                inner.quals[r.into] = "__global "
        self.refinements(ir.Block(refs=tuple(r for r in self.p.entry.refs
                                             if r.from_ is not None)), inner)
        return inner

    def _fills(self, temps: tuple) -> list:
        """Launches filling each non-input buffer (and temporary) with its identity."""
        dead = {r.from_ for r in self.p.entry.refs if "overwritten" in r.tags}
        fills = [(k, math.prod(b.shape), b.init, b.dtype)
                 for k, b in enumerate(self.p.buffers) if b.kind != "in" and b.name not in dead]
        aggs = {r.into: r for r in self.p.entry.refs if r.from_ is None}
        nb = len(self.p.buffers)
        fills += [(nb + k, n, aggs[name].agg, dt) for k, (name, dt, n) in enumerate(temps)
                  if "overwritten" not in aggs[name].tags]
        # grid-stride: at most 64Ki work-items, in groups the driver picks
        return [Launch(f"plait_fill_{dt}", (min(max(n, 1), 1 << 16),), (),
                       fill=(k, n, np_dtype(CL_STORAGE.get(dt, dt)).type(
                           ir.agg_identity(agg, dt))))
                for k, n, agg, dt in fills if n]


def _items(blk: ir.Block) -> int:
    """How many leading indexes of ``blk`` are spread over a work-group's items."""
    return next((int(t[6:]) for t in blk.tags if t.startswith("items_")), 0)


def render_kernels(program: ir.Program, name: str) -> KernelSet:
    """OpenCL C kernels computing ``program`` (after the target's passes)."""
    if any(b.dtype == "f16" for b in program.buffers):
        raise CompileError("float16 has no OpenCL rendering here", locate=False)
    return OpenCLRenderer(program, name).render()


def needs_fp64(program: ir.Program) -> bool:
    """Whether the program computes in double precision."""
    return any(b.dtype == "f64" for b in program.buffers)

