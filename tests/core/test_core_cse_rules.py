"""CSE is generic: copy propagation asks each primitive's ``is_copy`` rule."""
from __future__ import annotations

import numpy as np

import plait
import plait.numpy as pnp
from plait import lax
from plait.core.primitive import Primitive
from plait.passes.cse import cse


def test_cse_forwards_identity_conversions_and_keeps_real_ones():
    def f(x):
        a = lax.convert_element_type(x, np.float32)      # identity: a copy
        b = lax.convert_element_type(x, np.float64)      # a real conversion
        return a * 2, b
    closed = plait.make_graph(f)(np.ones(3, np.float32))
    names = [e.prim.name for e in cse(closed).graph.eqns]
    assert names.count("convert_element_type") == 1
    out = plait.jit(f)(np.ones(3, np.float32))
    np.testing.assert_array_equal(np.asarray(out[0]), np.full(3, 2, np.float32))


def test_cse_consults_the_rule_of_any_primitive():
    from plait.core.graph import ClosedGraph, Eqn, Graph, Var
    from plait.core.aval import ShapedArray
    p = Primitive("toy_copy")
    p.def_rule("is_copy", lambda x, *, k: k == 0)
    p.def_abstract_eval(lambda x, *, k: x)
    aval = ShapedArray((2,), np.dtype(np.float32))
    x, y, z = Var(aval), Var(aval), Var(aval)
    g = Graph([], [x], [Eqn(p, [x], {"k": 0}, [y], ""), Eqn(p, [y], {"k": 1}, [z], "")],
              [z], "g")
    out = cse(ClosedGraph(g, [])).graph
    assert len(out.eqns) == 1 and out.eqns[0].inputs == [x] and out.eqns[0].params == {"k": 1}


def test_equal_constants_merge_and_so_do_the_products_reading_them():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((6, 4)).astype(np.float32)
    M2 = M.copy()                                   # another object, the same values

    def f(x):
        return pnp.dot(M, x) * pnp.dot(M2, x)
    x = rng.standard_normal(4).astype(np.float32)
    closed = plait.make_graph(f)(x)
    assert len(closed.consts) == 2
    out = cse(closed)
    assert len(out.consts) == len(out.graph.constvars) == 1
    assert [e.prim.name for e in out.graph.eqns].count("dot_general") == 1
    np.testing.assert_allclose(np.asarray(plait.jit(f)(x)), (M @ x) * (M2 @ x), rtol=1e-5)


def test_constants_with_different_bytes_stay_apart():
    z, nz = np.zeros(3, np.float32), -np.zeros(3, np.float32)    # equal as numbers only

    def f(x):
        return x / z + x / nz
    closed = plait.make_graph(f)(np.ones(3, np.float32))
    assert len(cse(closed).consts) == 2
    assert np.isnan(np.asarray(plait.jit(f)(np.ones(3, np.float32)))).all()   # inf + -inf
