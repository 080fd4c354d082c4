"""Recompute cheap values in the kernel that reads them instead of passing them through memory.

A value computed only from index arithmetic, literals and operands both small and much
smaller than the value itself (``iota``, broadcasts, comparisons of them: a backward
pass's triangle masks, a constant matrix of zeros or halves, a vector broadcast to a
matrix) costs a few instructions per
element to compute and a full write and read when one kernel writes it for a later
kernel, across a library call such as a GEMM or a triangular solve that ends the
kernel. :func:`rematerialize` gives each later kernel its own copy of such an
equation chain, placed just before the equation reading it; a producer whose value
no longer crosses a kernel boundary is then not written (the kernel's outputs follow
liveness and its dead Tile statements are dropped). Transcendental operations are not
copied (their per-element cost exceeds a memory trip).
"""
from __future__ import annotations

import math
from typing import Callable

from plait.core.effects import has_effects
from plait.core.graph import Graph, Literal, Var, subgraphs_of
from plait.lax import elementwise as E
from plait.lax import shape_ops as S
from plait.lax.elementwise_spec import ops, primitive

# an operand this small (elements) is re-read by the recomputing kernel
SMALL = 1 << 14
# ... and at least this many times smaller than the value computed from it: a copy reading
# operands the size of its result saves no memory traffic, and keeps those operands
# alive until the later kernel (a chain of residual adds kept every layer's activation)
SPREAD = 8
# at most this many equations are copied for one value
MAX_CHAIN = 8

_STRUCTURAL = (S.iota_p, S.broadcast_in_dim_p, E.convert_element_type_p, E.select_p)


def _cheap_prims() -> set:
    out = set(_STRUCTURAL)
    for op in ops():
        if op.dtypes and not op.transcendental:
            out.add(primitive(op.name))
    return out


def rematerialize(graph: Graph, in_kernel: Callable) -> Graph:
    """``graph`` with each cheap value read by a kernel equation (``in_kernel(eqn)``) in a
    later kernel region (regions are separated by equations outside kernels) computed
    again in that region by a copy of its equations."""
    cheap_prims = _cheap_prims()
    cheap: dict[Var, tuple] = {}      # var -> (its equation, region, chain length)
    clones: dict[tuple, Var] = {}     # (var, region) -> the region's copy
    eqns: list = []
    region = 0

    def local(a, here: int):
        if not isinstance(a, Var) or a not in cheap or cheap[a][1] == here:
            return a
        key = (a, here)
        if key not in clones:
            e = cheap[a][0]
            ins = [local(x, here) for x in e.inputs]
            new = Var(a.aval)
            eqns.append(e.replace(inputs=ins, outputs=[new]))
            clones[key] = new
            cheap[new] = (eqns[-1], here, cheap[a][2])
        return clones[key]

    def chain(e) -> int | None:
        if (e.prim not in cheap_prims or len(e.outputs) != 1 or has_effects(e)
                or next(subgraphs_of(e.params), None) is not None):
            return None
        n, size = 1, math.prod(e.outputs[0].aval.shape)
        for a in e.inputs:
            if isinstance(a, Literal):
                continue
            if a in cheap:
                n += cheap[a][2]
            elif math.prod(a.aval.shape) > min(SMALL, size // SPREAD):
                return None
        return n if n <= MAX_CHAIN else None

    for e in graph.eqns:
        if not in_kernel(e):
            region += 1
            eqns.append(e)
            continue
        ins = [local(a, region) for a in e.inputs]
        if any(x is not a for x, a in zip(ins, e.inputs)):
            e = e.replace(inputs=ins)
        eqns.append(e)
        n = chain(e)
        if n is not None:
            cheap[e.outputs[0]] = (e, region, n)
    if not clones:
        return graph
    return Graph(graph.constvars, graph.invars, eqns, graph.outvars, graph.name)
