"""Side effects: which equations must run even when nothing uses their outputs.

A primitive declares itself effectful with ``Primitive.effectful = True`` (the
callback primitives of ``plait.lax.callbacks`` do). An equation *has effects* when
its primitive is effectful or any sub-graph in its params (a loop body, a branch, a
called graph) holds an equation that has effects. Graph passes ask this generically:
DCE keeps such equations, CSE never merges them, LICM never hoists them, and
backends never constant-fold them, so effects run once each, in program order.
"""
from __future__ import annotations

import weakref

from plait.core.graph import ClosedGraph, Graph, subgraphs_of

# graph -> has effects; an entry lives as long as its graph
_GRAPH_MEMO: "weakref.WeakKeyDictionary[Graph, bool]" = weakref.WeakKeyDictionary()


def graph_has_effects(graph: Graph) -> bool:
    """Whether any equation of ``graph`` (or of its sub-graphs) has effects."""
    hit = _GRAPH_MEMO.get(graph)
    if hit is not None:
        return hit
    res = _GRAPH_MEMO[graph] = any(has_effects(e) for e in graph.eqns)
    return res


def has_effects(eqn) -> bool:
    """Whether ``eqn`` must run even when its outputs are unused."""
    if getattr(eqn.prim, "effectful", False):
        return True
    return any(graph_has_effects(g) for g in subgraphs_of(eqn.params))


def drop_output_free_effects(graph: Graph) -> Graph:
    """``graph`` without its effects that have no outputs (debug prints and callbacks),
    also inside sub-graphs: for code that *recomputes* a value already computed once
    (the backward pass of a loop), so prints run once per forward evaluation."""
    if not graph_has_effects(graph):
        return graph
    eqns = []
    for e in graph.eqns:
        if getattr(e.prim, "effectful", False) and not e.outputs:
            continue
        if any(True for _ in subgraphs_of(e.params)):
            e = e.replace(params={k: _strip(v) for k, v in e.params.items()})
        eqns.append(e)
    return Graph(graph.constvars, graph.invars, eqns, graph.outvars, graph.name)


def _strip(v):
    if isinstance(v, Graph):
        return drop_output_free_effects(v)
    if isinstance(v, ClosedGraph):
        return ClosedGraph(drop_output_free_effects(v.graph), v.consts)
    if isinstance(v, tuple):
        return tuple(_strip(x) for x in v)
    return v
