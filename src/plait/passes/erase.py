"""Erase identity markers: equations whose primitive has the ``erase`` rule
(``checkpoint_name``) return their operands unchanged; their
outputs are replaced by the operands, also inside sub-graphs. Runs last, after CSE has
respected the barriers."""
from __future__ import annotations

from plait.core.graph import ClosedGraph, Graph, Var, subgraphs_of


def _in_params(v):
    if isinstance(v, Graph):
        return erase_graph(v)
    if isinstance(v, ClosedGraph):
        return ClosedGraph(erase_graph(v.graph), v.consts)
    if isinstance(v, tuple) and any(isinstance(x, (Graph, ClosedGraph)) for x in v):
        return tuple(_in_params(x) for x in v)
    return v


def erase_graph(graph: Graph) -> Graph:
    """``graph`` without its identity markers (recursively into sub-graphs); the same
    object when it has none."""
    if not _has_markers(graph):
        return graph
    rename: dict = {}

    def sub(a):
        return rename.get(a, a) if isinstance(a, Var) else a

    eqns = []
    for eqn in graph.eqns:
        ins = [sub(a) for a in eqn.inputs]
        if eqn.prim.has_rule("erase"):
            rename.update(zip(eqn.outputs, ins))
            continue
        if next(subgraphs_of(eqn.params), None) is not None:
            eqn = eqn.replace(params={k: _in_params(v) for k, v in eqn.params.items()})
        eqns.append(eqn.replace(inputs=ins))
    return Graph(graph.constvars, graph.invars, eqns, [sub(a) for a in graph.outvars],
                 graph.name)


def _has_markers(graph: Graph) -> bool:
    return any(e.prim.has_rule("erase") or any(_has_markers(g) for g in subgraphs_of(e.params))
               for e in graph.eqns)


def erase(closed: ClosedGraph) -> ClosedGraph:
    return ClosedGraph(erase_graph(closed.graph), closed.consts)
