"""Fixtures for the control-flow tests: run each function eagerly and under jit."""
import numpy as np
import pytest

import plait
from plait import lax


@pytest.fixture(params=["eager", "jit"])
def mode(request):
    """Wrap a function: identity (eager evaluation) or ``plait.jit``."""
    return (lambda f: f) if request.param == "eager" else plait.jit


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
