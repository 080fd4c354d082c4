"""Dead-code elimination of a closed graph (see :mod:`plait.core.dce`); unused consts go too."""
from __future__ import annotations

from plait.core.dce import dce_graph
from plait.core.graph import ClosedGraph, Graph, Var


def dce(closed: ClosedGraph) -> ClosedGraph:
    """DCE of a closed graph; unused consts are dropped too."""
    g, _ = dce_graph(closed.graph)
    live = set()
    for e in g.eqns:
        live.update(a for a in e.inputs if isinstance(a, Var))
    live.update(v for v in g.outvars if isinstance(v, Var))
    keep = [i for i, v in enumerate(g.constvars) if v in live]
    g2 = Graph([g.constvars[i] for i in keep], g.invars, g.eqns, g.outvars, g.name)
    return ClosedGraph(g2, [closed.consts[i] for i in keep])
