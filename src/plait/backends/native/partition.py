"""Partition a graph into native kernels and host steps, lowering kernels to Tile.

Equations are visited in order. Consecutive equations with a ``to_tile`` rule
(and supported dtypes) are lowered into one kernel's Tile program; elementwise
chains fuse into single expressions there, and reductions and contractions read
their fused prologues. An equation without a lowering (gather, scatter, sort,
control flow, complex arithmetic) becomes a host step run with its NumPy
``impl``, and closes the current kernel. A very long run of kernel equations that
repeats a step (an unrolled loop) is cut into kernels of a few steps each (see
``LONG_RUN_EQNS``). Everything here is linear in the number of equations.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

import numpy as np

from plait.backends.liveness import lifetimes
from plait.core.graph import Graph, Literal, Var
from plait.tile import ir as tile_ir
from plait.errors import NotLowerable
from plait.tile.lowering import LowerCtx, STRIPE_DTYPES, TVal
import plait.tile.rules  # noqa: F401  (registers the to_tile rules)
from plait.backends.native import conv, gemm
from plait.backends.native.library import use_library
from plait.backends.native.remat import rematerialize


@dataclass
class KernelStep:
    """One native kernel: a Tile program reading ``inputs`` and writing ``outputs``."""

    name: str
    program: tile_ir.Program
    inputs: dict          # Tile input name -> graph Var
    outputs: dict         # Tile output name -> graph Var
    eqns: list = field(default_factory=list)
    stmt_ends: list = field(default_factory=list)   # Tile statements made up to each eqn


@dataclass
class HostStep:
    """One equation run on the host with its ``impl``."""

    eqn: object


def _dtype_ok(aval, target) -> bool:
    dt = np.dtype(aval.dtype)
    return (dt in STRIPE_DTYPES and STRIPE_DTYPES[dt] not in target.unsupported_dtypes
            and 0 not in aval.shape)


def lowerable(eqn, target) -> bool:
    """Whether an equation can go into a native kernel (and ``target`` wants it there)."""
    if (not eqn.prim.has_rule("to_tile") or use_library(eqn, target) or gemm.routes(eqn, target)
            or conv.routes(eqn, target)):
        return False
    avals = [a.aval for a in eqn.inputs] + [v.aval for v in eqn.outputs]
    return all(_dtype_ok(a, target) for a in avals)


class _KernelBuilder:
    def __init__(self, name: str):
        self.ctx = LowerCtx(name)
        self.name = name
        self.env: dict[Var, TVal] = {}
        self.inputs: dict[str, Var] = {}
        self.eqns: list = []
        self.stmt_ends: list = []

    def value(self, a) -> TVal:
        if isinstance(a, Literal):
            return self.ctx.const(a.val, a.aval.dtype)
        v = self.env.get(a)
        if v is None:
            name = f"in{len(self.inputs)}"
            v = self.ctx.input(name, a.aval.shape, a.aval.dtype)
            self.inputs[name] = a
            self.env[a] = v
        return v

    def try_add(self, eqn) -> bool:
        """Lower ``eqn`` into the kernel; False (and the kernel as it was) when its rule
        raises ``NotLowerable``."""
        mark = self.ctx.checkpoint()
        n_env, n_inputs = len(self.env), len(self.inputs)     # these only grow too
        try:
            ins = [self.value(a) for a in eqn.inputs]
            self.ctx.out_avals = [v.aval for v in eqn.outputs]
            out = eqn.prim.rule("to_tile")(self.ctx, *ins, **eqn.params)
        except NotLowerable:
            self.ctx.rollback(mark)
            for d, n in ((self.env, n_env), (self.inputs, n_inputs)):
                while len(d) > n:
                    d.popitem()
            return False
        outs = out if eqn.prim.multiple_results else [out]
        for v, o in zip(eqn.outputs, outs):
            self.env[v] = o
        self.eqns.append(eqn)
        self.stmt_ends.append(len(self.ctx.b.stmts))
        return True

    def finish(self, live_after) -> KernelStep | None:
        """The kernel, writing the values that ``live_after(v)`` says are still needed."""
        outs = [v for e in self.eqns for v in e.outputs if live_after(v)]
        if not outs:
            return None
        b = self.ctx.b
        seen = set()
        out_names = {}
        for v in outs:
            t = self.ctx.tensor(self.env[v])
            if t.name in b.inputs or t.name in seen:
                c = b.temp(t.dtype, t.shape)
                b.eltwise(c, tile_ir.Input(t.name))
                t = c
            seen.add(t.name)
            b.output(t)
            out_names[t.name] = v
        kept = list(itertools.accumulate(b.drop_dead(), initial=0))
        return KernelStep(self.name, self.ctx.build(), dict(self.inputs), out_names, self.eqns,
                          [kept[e] for e in self.stmt_ends])


# A kernel is one C function, and the C compiler's time grows faster than linearly with
# the number of loops in a function (420 equations of an unrolled loop in one kernel:
# 1.2 s of gcc; in 64-equation kernels: 0.2 s). In a run of more than
# ``LONG_RUN_EQNS`` consecutive kernel equations, a kernel that has reached
# ``SOFT_STMTS`` Tile statements (its loops before fusion) is closed after the first
# equation with no fewer values live across it than any of the next ``LOOKAHEAD``,
# and at ``HARD_STMTS`` statements in any case. A repeated step is so cut between
# steps: its kernels come out identical and the native backend compiles one. The cuts
# are kept only when they repeat (``_repetitive``): a long run of distinct work (a
# PRNG's rounds: 450 equations, 79 statements) stays one kernel, as do the workloads'
# kernels (at most 358 equations).
LONG_RUN_EQNS = 384
SOFT_STMTS = 24
HARD_STMTS = 64
LOOKAHEAD = 16


def _last_uses(graph: Graph) -> dict:
    """``{var: index of the last equation reading it}`` (``len(eqns)`` for outputs)."""
    reads = [[a for a in e.inputs if isinstance(a, Var)] for e in graph.eqns]
    reads.append([v for v in graph.outvars if isinstance(v, Var)])    # read after the end
    return dict(lifetimes(reads, [()] * len(reads)).last_use)


def _live_counts(graph: Graph, last: dict) -> list[int]:
    """How many values are live across the boundary after each equation."""
    live = []
    count = 0
    ends: dict[int, int] = {}
    for v in graph.invars + graph.constvars:
        if v in last:
            count += 1
            ends[last[v]] = ends.get(last[v], 0) + 1
    for i, e in enumerate(graph.eqns):
        for v in e.outputs:
            if last.get(v, -1) > i:
                count += 1
                ends[last[v]] = ends.get(last[v], 0) + 1
        count -= ends.pop(i, 0)
        live.append(count)
    return live


def _long_runs(kernel_ok: list) -> list[bool]:
    """Whether each equation is in a run of more than ``LONG_RUN_EQNS`` kernel equations."""
    out = [False] * len(kernel_ok)
    i = 0
    while i < len(kernel_ok):
        j = i
        while j < len(kernel_ok) and kernel_ok[j]:
            j += 1
        if j - i > LONG_RUN_EQNS:
            out[i:j] = [True] * (j - i)
        i = j + 1
    return out


def _cut_here(i: int, n_stmts: int, live: list[int]) -> bool:
    """Whether a kernel of ``n_stmts`` Tile statements in a long run ends after equation ``i``."""
    if n_stmts >= HARD_STMTS:
        return True
    return n_stmts >= SOFT_STMTS and live[i] <= min(live[i + 1:i + 1 + LOOKAHEAD], default=0)


def partition(graph: Graph, target, prefix: str = "") -> list:
    """Steps (``KernelStep``/``HostStep``) that compute ``graph`` on ``target`` (a
    ``stripe.targets.Target``) in order; kernel names start with ``prefix``. Cheap values
    read across a kernel boundary are recomputed by the reading kernel (``remat``), and
    transposes read only by library GEMMs are read by their packing instead
    (``gemm.fold_transposes``)."""
    graph = rematerialize(gemm.fold_transposes(graph, target), lambda e: lowerable(e, target))
    last = _last_uses(graph)
    kernel_ok = [lowerable(e, target) for e in graph.eqns]
    long_run = _long_runs(kernel_ok)
    if any(long_run):
        steps = _partition(graph, prefix, last, kernel_ok, long_run, _live_counts(graph, last))
        if _repetitive([s for s in steps if isinstance(s, KernelStep)]):
            return steps
    return _partition(graph, prefix, last, kernel_ok, [False] * len(kernel_ok), [])


def _repetitive(kernels: list) -> bool:
    """Whether cutting long runs gave mostly repeated kernels (at most half distinct).
    Cuts cost a kernel's intermediate values a trip through memory; they pay off when
    the C compiler then sees each distinct kernel once."""
    distinct = {replace(k.program, name="") for k in kernels}
    return len(distinct) * 2 <= len(kernels)


def _partition(graph: Graph, prefix: str, last: dict, kernel_ok: list, long_run: list,
               live: list) -> list:
    steps: list = []
    kb: _KernelBuilder | None = None

    def close(i):
        nonlocal kb
        if kb is not None and kb.eqns:
            k = kb.finish(lambda v: last.get(v, -1) > i)
            if k is not None:
                steps.append(k)
        kb = None

    for i, eqn in enumerate(graph.eqns):
        if kernel_ok[i]:
            if kb is None:
                kb = _KernelBuilder(f"{prefix}k{len(steps)}")
            if kb.try_add(eqn):
                if long_run[i] and _cut_here(i, len(kb.ctx.b.stmts), live):
                    close(i)
                continue
        if i:
            close(i - 1)
        steps.append(HostStep(eqn))
    if graph.eqns:
        close(len(graph.eqns) - 1)
    return steps
