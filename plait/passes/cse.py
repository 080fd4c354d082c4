"""Common-subexpression elimination: equal primitive, params and inputs -> one equation."""
from __future__ import annotations

from plait.core.graph import ClosedGraph, Graph, Literal, Var


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


def cse_graph(graph: Graph) -> Graph:
    """CSE within one graph (sub-graphs are left as they are)."""
    rename: dict[Var, Var] = {}
    seen: dict = {}
    eqns = []
    for eqn in graph.eqns:
        inputs = [rename.get(a, a) if isinstance(a, Var) else a for a in eqn.inputs]
        pk = _params_key(eqn.params)
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
