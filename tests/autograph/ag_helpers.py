"""Shared helpers for the autograph tests: compile with autograph, count primitives."""
from __future__ import annotations

from collections import Counter

import numpy as np

import plait
from plait.core.graph import subgraphs_of


def ag_jit(f, **kw):
    """``jit(f, autograph=True)`` on the reference backend (these tests are about the
    conversion, not code generation)."""
    return plait.jit(f, autograph=True, backend="interp", **kw)


def prim_counts(graph) -> Counter:
    """How many equations of each primitive ``graph`` has, sub-graphs included."""
    c: Counter = Counter()
    for e in graph.eqns:
        c[e.prim.name] += 1
        for g in subgraphs_of(e.params):
            c.update(prim_counts(g))
    return c


def top_counts(graph) -> Counter:
    """Equations per primitive at the top level of ``graph`` only."""
    return Counter(e.prim.name for e in graph.eqns)


def assert_tree_close(got, want, rtol=1e-6, atol=1e-6):
    """Compare two results leaf by leaf (tuples, lists, scalars, arrays)."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_tree_close(g, w, rtol, atol)
        return
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)
