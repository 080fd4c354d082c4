"""Partition a graph into native kernels and host steps, lowering kernels to Tile.

Equations are visited in order. Consecutive equations with a ``to_tile`` rule
(and supported dtypes) are lowered into one kernel's Tile program; elementwise
chains fuse into single expressions there, and reductions and contractions read
their fused prologues. An equation without a lowering (gather, scatter, sort,
control flow, complex arithmetic) becomes a host step run with its NumPy
``impl``, and closes the current kernel.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from plait.core.graph import Graph, Literal, Var
from plait.tile import ir as tile_ir
from plait.tile.lowering import LowerCtx, NotLowerable, STRIPE_DTYPES, TVal
import plait.tile.rules  # noqa: F401  (registers the to_tile rules)
from plait.backends.native.library import use_library
from plait.backends.native.target import host_target


@dataclass
class KernelStep:
    """One native kernel: a Tile program reading ``inputs`` and writing ``outputs``."""

    name: str
    program: tile_ir.Program
    inputs: dict          # Tile input name -> graph Var
    outputs: dict         # Tile output name -> graph Var
    eqns: list = field(default_factory=list)


@dataclass
class HostStep:
    """One equation run on the host with its ``impl``."""

    eqn: object


def _dtype_ok(aval) -> bool:
    return np.dtype(aval.dtype) in STRIPE_DTYPES and 0 not in aval.shape


def lowerable(eqn) -> bool:
    """Whether an equation can go into a native kernel (and the target wants it there)."""
    if not eqn.prim.has_rule("to_tile") or use_library(eqn, host_target()):
        return False
    avals = [a.aval for a in eqn.inputs] + [v.aval for v in eqn.outputs]
    return all(_dtype_ok(a) for a in avals)


class _KernelBuilder:
    def __init__(self, name: str):
        self.ctx = LowerCtx(name)
        self.name = name
        self.env: dict[Var, TVal] = {}
        self.inputs: dict[str, Var] = {}
        self.eqns: list = []

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
        saved = (len(self.ctx.b.stmts), dict(self.ctx.b.tensors), list(self.ctx.b.inputs),
                 dict(self.env), dict(self.inputs), dict(self.ctx.memo))
        try:
            ins = [self.value(a) for a in eqn.inputs]
            self.ctx.out_avals = [v.aval for v in eqn.outputs]
            out = eqn.prim.rule("to_tile")(self.ctx, *ins, **eqn.params)
        except NotLowerable:
            n, tensors, tin, env, inputs, memo = saved
            del self.ctx.b.stmts[n:]
            self.ctx.b.tensors, self.ctx.b.inputs, self.env, self.inputs = tensors, tin, env, inputs
            self.ctx.memo = memo
            return False
        outs = out if eqn.prim.multiple_results else [out]
        for v, o in zip(eqn.outputs, outs):
            self.env[v] = o
        self.eqns.append(eqn)
        return True

    def finish(self, live_after: set) -> KernelStep | None:
        outs = [v for e in self.eqns for v in e.outputs if v in live_after]
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
        return KernelStep(self.name, self.ctx.build(), dict(self.inputs), out_names, self.eqns)


def partition(graph: Graph, prefix: str = "") -> list:
    """Steps (``KernelStep``/``HostStep``) that compute ``graph`` in order; kernel
    names start with ``prefix``."""
    # the vars each position still needs: used by a later equation or as an output
    need_after: list[set] = [set() for _ in graph.eqns]
    live = {v for v in graph.outvars if isinstance(v, Var)}
    for i in range(len(graph.eqns) - 1, -1, -1):
        need_after[i] = set(live)
        live |= {a for a in graph.eqns[i].inputs if isinstance(a, Var)}
    steps: list = []
    kb: _KernelBuilder | None = None

    def close(i):
        nonlocal kb
        if kb is not None and kb.eqns:
            k = kb.finish(need_after[i])
            if k is not None:
                steps.append(k)
        kb = None

    for i, eqn in enumerate(graph.eqns):
        if lowerable(eqn):
            if kb is None:
                kb = _KernelBuilder(f"{prefix}k{len(steps)}")
            if kb.try_add(eqn):
                continue
        if i:
            close(i - 1)
        steps.append(HostStep(eqn))
    if graph.eqns:
        close(len(graph.eqns) - 1)
    return steps
