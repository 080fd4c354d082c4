"""Inline call-like equations: a nested jit's (or a ``remat``'s) sub-graph becomes part
of its caller.

A primitive takes part through its ``inline`` rule ``rule(eqn) -> (eqns_before, graph,
operands)``: equations to emit first (``remat`` puts an ``optimization_barrier`` on its
operands there) and the sub-graph to splice in, fed with ``operands``.
"""
from __future__ import annotations

from plait.core.call import jit_call_p
from plait.core.graph import ClosedGraph, Graph, Var


def _jit_call_inline(eqn):
    return [], eqn.params["graph"], eqn.inputs


jit_call_p.def_rule("inline", _jit_call_inline)


def inline_graph(graph: Graph) -> Graph:
    """Replace every equation with an ``inline`` rule (recursively) by its sub-graph."""
    if not any(e.prim.has_rule("inline") for e in graph.eqns):
        return graph
    rename: dict = {}

    def sub(a):
        return rename.get(a, a) if isinstance(a, Var) else a

    eqns = []
    for eqn in graph.eqns:
        eqn = eqn.replace(inputs=[sub(a) for a in eqn.inputs])
        if not eqn.prim.has_rule("inline"):
            eqns.append(eqn)
            continue
        before, inner, operands = eqn.prim.rule("inline")(eqn)
        eqns.extend(before)
        inner = inline_graph(inner)
        env = dict(zip(inner.invars, operands))
        for ie in inner.eqns:
            outs = [Var(v.aval) for v in ie.outputs]
            env.update(zip(ie.outputs, outs))
            eqns.append(ie.replace(inputs=[env.get(a, a) if isinstance(a, Var) else a
                                           for a in ie.inputs], outputs=outs))
        for o, r in zip(eqn.outputs, inner.outvars):
            rename[o] = env.get(r, r) if isinstance(r, Var) else r
    outvars = [sub(a) for a in graph.outvars]
    return Graph(graph.constvars, graph.invars, eqns, outvars, graph.name)


def inline(closed: ClosedGraph) -> ClosedGraph:
    return ClosedGraph(inline_graph(closed.graph), closed.consts)


__all__ = ["inline", "inline_graph"]
