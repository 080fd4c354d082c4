"""Common-subexpression elimination: equal primitive, params and inputs -> one equation.

Copies are propagated first: an equation whose primitive's ``is_copy`` rule says its one
output equals its one input (``is_copy(in_aval, **params) -> bool``; a
``convert_element_type`` to the dtype its operand already has, as the lazy runtime's
differentiation markers are) is dropped and its uses read the operand instead, so the
recorded forward pass and a backward graph's recomputation of it meet.
"""
from __future__ import annotations

from plait.core.effects import has_effects
from plait.core.graph import ClosedGraph, Graph, Literal, Var, subgraphs_of


def _key_atom(a, rename):
    if isinstance(a, Literal):
        return ("lit", a.aval, a.val.tobytes())
    return rename.get(a, a)


def _params_key(params):
    try:
        key = tuple(sorted(params.items()))
        hash(key)
        return key
    except TypeError:
        return None


def _sub_graphs(params: dict, memo: dict) -> dict:
    """``params`` with every sub-graph (also inside tuples) CSE'd, each graph once."""
    def conv(v):
        if isinstance(v, Graph):
            if id(v) not in memo:
                memo[id(v)] = (v, cse_graph(v, memo))
            return memo[id(v)][1]
        if isinstance(v, tuple) and any(isinstance(x, Graph) for x in v):
            return tuple(conv(x) for x in v)
        return v
    return {k: conv(v) for k, v in params.items()}


def cse_graph(graph: Graph, _memo: dict | None = None) -> Graph:
    """CSE within one graph and, separately, within each of its sub-graphs."""
    memo = {} if _memo is None else _memo
    rename: dict[Var, Var] = {}
    seen: dict = {}
    eqns = []
    for eqn in graph.eqns:
        inputs = [rename.get(a, a) if isinstance(a, Var) else a for a in eqn.inputs]
        is_copy = eqn.prim.rules.get("is_copy")
        if is_copy is not None and is_copy(inputs[0].aval, **eqn.params):
            rename[eqn.outputs[0]] = inputs[0]
            continue
        if next(subgraphs_of(eqn.params), None) is not None:
            eqn = eqn.replace(params=_sub_graphs(eqn.params, memo))
        pk = None if has_effects(eqn) else _params_key(eqn.params)   # effects never merge
        if pk is not None:
            key = (eqn.prim, tuple(_key_atom(a, rename) for a in inputs), pk)
            prev = seen.get(key)
            if prev is not None:
                for o, p in zip(eqn.outputs, prev.outputs):
                    rename[o] = p
                continue
            new = eqn.replace(inputs=inputs)
            seen[key] = new
        else:
            new = eqn.replace(inputs=inputs)
        eqns.append(new)
    outvars = [rename.get(a, a) if isinstance(a, Var) else a for a in graph.outvars]
    return Graph(graph.constvars, graph.invars, eqns, outvars, graph.name)


def cse(closed: ClosedGraph) -> ClosedGraph:
    return ClosedGraph(cse_graph(closed.graph), closed.consts)
