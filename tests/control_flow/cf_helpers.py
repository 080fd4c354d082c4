"""Helpers shared by the control-flow tests."""
import numpy as np

from plait import lax


def bcast(s, like):
    """Broadcast the scalar ``s`` to the shape of ``like`` (lax needs equal shapes)."""
    return lax.broadcast_in_dim(s, tuple(np.shape(like)), ())


def count_eqns(graph) -> int:
    """Equations in ``graph`` and, recursively, in its sub-graphs."""
    from plait.core.graph import subgraphs_of
    return sum(1 + sum(count_eqns(g) for g in subgraphs_of(e.params)) for e in graph.eqns)


def eqns_of(closed, name):
    """The top-level equations of primitive ``name`` in a closed graph."""
    return [e for e in closed.graph.eqns if e.prim.name == name]
