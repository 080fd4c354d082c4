"""Inline ``jit_call`` equations: a nested jit's sub-graph becomes part of its caller."""
from __future__ import annotations

from plait.core.call import jit_call_p
from plait.core.graph import ClosedGraph, Graph, Var


def inline_graph(graph: Graph) -> Graph:
    """Replace every ``jit_call`` (recursively) by the equations of its sub-graph."""
    if not any(e.prim is jit_call_p for e in graph.eqns):
        return graph
    rename: dict = {}

    def sub(a):
        return rename.get(a, a) if isinstance(a, Var) else a

    eqns = []
    for eqn in graph.eqns:
        if eqn.prim is not jit_call_p:
            eqns.append(eqn.replace(inputs=[sub(a) for a in eqn.inputs]))
            continue
        inner = inline_graph(eqn.params["graph"])
        env = {v: sub(a) for v, a in zip(inner.invars, eqn.inputs)}
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
